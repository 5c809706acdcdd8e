// Content hashes of files and blocks, computed from their sector checksums. The matcher
// groups by them and the catalog stores them, so both must compute them the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "src/fingerprint.h"

namespace btrdedupe {

// Hash of sectors [first, first+count) of `sums`, seeded by the datasum kind (nodatasum
// files never match datasum files). nullopt when any of those sectors is unknown.
std::optional<uint64_t> sectors_hash(FileSumsView sums, uint64_t first, uint64_t count,
                                     uint16_t csum_size, bool nodatasum);

// Whole-file hash: every sector known, mixed with the size (equal sums, different tails).
std::optional<uint64_t> whole_file_hash(FileSumsView sums, uint64_t size, uint16_t csum_size,
                                        bool nodatasum);

// One hash per full block of block_size bytes (0 where a block is not fully known).
std::vector<uint64_t> block_hashes(FileSumsView sums, uint64_t size, uint32_t sectorsize,
                                   uint16_t csum_size, uint64_t block_size, bool nodatasum);

}  // namespace btrdedupe
