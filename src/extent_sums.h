// The sums of one physical extent while fingerprinting: filled from the csum tree or from
// the data, then laid out per file. Shared by src/fingerprint.cpp and src/extent_reads.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace btrdedupe {

struct ExtentSums {
  size_t first_ref = 0, end_ref = 0;  // range of ScanResult::extents referencing it
  uint64_t disk_bytenr = 0;
  uint64_t sectors = 0;               // in its decompressed sector space
  bool compressed = false;
  std::vector<uint8_t> sums;          // sectors * csum_size bytes
  std::vector<bool> known;            // per sector
};

}  // namespace btrdedupe
