// The sums of one physical extent while fingerprinting: filled from the csum tree or from
// the data, then laid out per file. Shared by src/fingerprint/fingerprint.cpp and src/fingerprint/extent_reads.cpp.
// The sums live in two buffers shared by every extent of the run (src/fingerprint/fingerprint.cpp owns
// them): two vectors per extent cost ~100 bytes of headers and malloc overhead each, about
// 10 MB on 100k extents, for a few bytes of sums.
#pragma once

#include <cstddef>
#include <cstdint>

namespace btrdedupe {

struct ExtentSums {
  size_t first_ref = 0, end_ref = 0;  // range of ScanResult::extents referencing it
  uint64_t disk_bytenr = 0;
  uint64_t sectors = 0;               // in its decompressed sector space
  bool compressed = false;
  uint8_t* sums = nullptr;            // sectors * csum_size bytes
  // Per sector, a byte and not a bit: workers fill different extents at the same time.
  uint8_t* known = nullptr;
};

}  // namespace btrdedupe
