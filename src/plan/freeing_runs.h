// Short runs where they free space (issue #39). The matcher proposes runs of -b (128 KiB)
// or more; inside a disk image of a real tree most files are smaller, so a destination
// image's extent is covered by the plan's long runs but for the small files, directory
// blocks and metadata between them. That extent is then kept whole for a few KiB.
//
// Here, after planning: for each destination extent the plan touches but does not free,
// its remainder (the bytes its references hold outside the destination ranges, a range a
// round reads from among them) is looked for, at any sector, in the data of the extents
// the plan keeps: those no destination range touches, and those it leaves mostly
// outside its ranges (more than half: they stay, and were never tried). A remainder that was a round's source then becomes a
// destination, and its rounds read from where its bytes go (src/plan/chained_sources.h). Equal runs down to the shortest that holds
// 64 bits of sums (2 sectors with crc32c, 1 with the longer sums) become groups and rounds
// of their own, but only for an extent they let go: its remainder filled entirely, or left
// small enough for the remainder rewrite (src/plan/remainder_plan.h). Elsewhere a short run
// would only cut the file into more extents for nothing; and where the rewrite alone
// already lets the extent go, it does, with one new extent per remainder range where the
// short runs would cut one per run (real ext4 images: 1,435 extents in the image most
// deduped into, against 1,695, for 91.4% of a perfect dedupe against 92.6%).
//
// Memory: the index holds 16 bytes per remainder sector, and only for the extents tried
// (at most max_index_entries: 16 MiB by default, the remainders of smallest share first).
// Pure logic on the scan, the sums and the plan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/plan/dedupe_plan.h"
#include "src/match/duplicate_match.h"
#include "src/fingerprint/fingerprint.h"
#include "src/plan/freed_space.h"
#include "src/plan/remainder_plan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct FreeingRunRules {
  RemainderRules remainder;             // what the rewrite would take of what is left
  size_t max_index_entries = 1u << 19;  // 16 bytes each: at most 8 MiB
  // Extents no destination range touches are tried when shorter than this (-b: the
  // matcher finds equal runs as long as it), so a short file's equal tail is shared.
  uint64_t untouched_below = 128 * 1024;
};

struct FreeingRuns {
  uint64_t groups = 0, bytes = 0;       // runs added (one group each), their bytes
  uint64_t extents = 0;                 // extents they let go (whole, or with a rewrite)
  uint64_t index_entries = 0;           // remainder sectors indexed
  void add(const FreeingRuns& more) {
    groups += more.groups, bytes += more.bytes, extents += more.extents;
    index_entries = std::max(index_entries, more.index_entries);
  }
};

// Adds the runs to `matches` (partial groups of two members: the kept copy first) and to
// `plan` (a round each, the plan then in physical order again, or most valuable first).
// `extents`: destination_extents of the plan before them; call it again after.
FreeingRuns add_freeing_runs(const ScanResult& scan, const FingerprintResult& fp,
                             const std::vector<PhysicalExtent>& extents,
                             const FreeingRunRules& rules, bool most_valuable_first,
                             MatchResult& matches, DedupePlan& plan);

}  // namespace btrdedupe
