// Alignment-free partial matching: equal runs of sector sums at any sector-aligned offsets
// in either file (issue #16). Internal to the matcher (src/match/duplicate_match.cpp).
//
// Files are taken in scan order. Each file's winnowed anchors (src/fingerprint/sum_anchors.h) are
// looked up in an index of where each anchor hash was first seen (src/match/anchor_index.h); a
// hit whose k sums are equal is extended sector by sector both ways, backwards to the
// start of either file or to the end of this file's previous run, forwards to the first
// sector that differs, is unknown or is a crc32c residue (those never prove a range), up to
// EOF when both files end together. A run of at least the minimum length (-b) becomes a
// member of the group of its source range; the file's later anchors inside it are not
// looked up again, so a file's runs as destination never overlap, and a run inside one file
// never overlaps its source. Every equal run of the minimum length or more holds a shared
// anchor; which earlier copy it is matched to is the one first seen with that anchor.
#pragma once

#include <cstdint>
#include <vector>

#include "src/match/duplicate_match.h"
#include "src/match/match_context.h"

namespace btrdedupe {

// Adds the partial groups of the scan's files to `out` (and the index figures).
// sources_only: files that are whole-file duplicates; their runs serve others as sources,
// they are never matched again.
void match_runs(const MatchContext& ctx, const std::vector<bool>& sources_only,
                uint64_t min_run_bytes, MatchResult& out);

}  // namespace btrdedupe
