// Whole-file candidates too short for their sums to propose them (one crc32c sector: 32
// bits, MatchResult::short_sum_candidates) are proven by their bytes: each member's data
// (at most one sector) is read and hashed with XXH3-64, and the files whose hashes agree
// become whole-file groups. The kernel's compare at dedupe time stays the proof of
// equality; this only keeps 32-bit sums from proposing unequal files.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "src/match/duplicate_match.h"

namespace btrdedupe {

// What the proofs read: data a run reads beside its fingerprints (the report's figures).
struct ShortFileProofCounts {
  uint64_t files_read = 0, bytes_read = 0;
  uint64_t files_known = 0;       // hashed already (FingerprintResult::short_hashes)
  uint64_t files_unreadable = 0;  // gone, changed since the scan or a short read: left out
  void add(const ShortFileProofCounts& more);
};

struct ShortFileProof {
  ShortFileProofCounts counts;
  // (file, hash) of each file read: a catalog keeps them (CatalogSession::keep_short_hashes).
  std::vector<std::pair<uint32_t, uint64_t>> hashes_read;
};

// Reads the candidates' data with `threads` workers (at least one), but for the files
// whose hash `fp` knows, adds the groups proven (add_whole_file_groups) and clears the
// candidates.
ShortFileProof prove_short_files(const ScanResult& scan, const FingerprintResult& fp,
                                 MatchResult& matches, unsigned threads = 1);

}  // namespace btrdedupe
