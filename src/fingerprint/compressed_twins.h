// Compressed extents that hold the same compressed bytes: the same algorithm, the same
// length on disk and the same checksum for every on-disk sector. Decompressing the same
// bytes gives the same data, so one of them is read for its sums and its twins take them
// without a read. Two copies written through the same compression (a `compress=zstd`
// filesystem receiving an unshared copy) pair up this way; a copy written otherwise (plain,
// another algorithm, another level) does not, and is read as before, so nothing a full
// read would match is lost. The checksums come from the same walk of the csum tree as the
// plain extents' sums (src/fingerprint/fingerprint.cpp): no data is read here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "btrfs/items.h"
#include "src/fingerprint/extent_sums.h"

namespace btrdedupe {

struct CompressedTwin {
  size_t twin = 0;  // index into the extents: takes the sums of
  size_t read = 0;  // this one, which is read (of its group, the most sectors, then the first on disk)
};

// The on-disk sums of compressed extents as the csum walk finds them, then their twins.
class CompressedKeys {
 public:
  explicit CompressedKeys(uint16_t csum_size) : csum_size_(csum_size) {}
  // Extent `extent` (an index into the extents), compressed with `compression`, takes
  // `disk_sectors` sectors on disk. Returns its key, for take().
  size_t add(size_t extent, btrfs::Compression compression, uint64_t disk_sectors);
  // The sums of `count` of its on-disk sectors from `sector` on.
  void take(size_t key, uint64_t sector, const uint8_t* sums, uint64_t count);
  // The twins among the extents added (`extents` as fingerprint() builds them, sorted by
  // disk address), each with the extent of its group that is read. An extent without a
  // sum for every on-disk sector has no twin.
  std::vector<CompressedTwin> twins(const std::vector<ExtentSums>& extents);

 private:
  struct Key {
    size_t extent = 0;
    uint64_t hash = 0;
    uint64_t disk_sectors = 0;
    uint8_t compression = 0;
    uint64_t sums_at = 0, present = 0;
  };
  const uint8_t* sums_of(const Key& k) const { return &sums_[k.sums_at * csum_size_]; }

  uint16_t csum_size_;
  std::vector<Key> keys_;
  std::vector<uint8_t> sums_;
};

}  // namespace btrdedupe
