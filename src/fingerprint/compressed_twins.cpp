#include "src/fingerprint/compressed_twins.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace btrdedupe {

size_t CompressedKeys::add(size_t extent, btrfs::Compression compression, uint64_t disk_sectors) {
  Key k;
  k.extent = extent;
  k.disk_sectors = disk_sectors;
  k.compression = static_cast<uint8_t>(compression);
  k.sums_at = sums_.size() / csum_size_;
  sums_.resize(sums_.size() + disk_sectors * csum_size_);
  keys_.push_back(k);
  return keys_.size() - 1;
}

void CompressedKeys::take(size_t key, uint64_t sector, const uint8_t* sums, uint64_t count) {
  Key& k = keys_[key];
  std::memcpy(&sums_[(k.sums_at + sector) * csum_size_], sums, count * csum_size_);
  k.present += count;
}

std::vector<CompressedTwin> CompressedKeys::twins(const std::vector<ExtentSums>& extents) {
  std::erase_if(keys_, [](const Key& k) { return !k.disk_sectors || k.present != k.disk_sectors; });
  for (auto& k : keys_) k.hash = XXH3_64bits(sums_of(k), k.disk_sectors * csum_size_);
  auto order = [](const Key& k) { return std::tie(k.hash, k.disk_sectors, k.compression); };
  std::sort(keys_.begin(), keys_.end(),
            [&](const Key& a, const Key& b) { return order(a) < order(b); });
  auto same = [&](const Key& a, const Key& b) {
    return order(a) == order(b) &&
           std::memcmp(sums_of(a), sums_of(b), a.disk_sectors * csum_size_) == 0;
  };
  std::vector<CompressedTwin> twins;
  for (size_t g = 0; g < keys_.size();) {
    size_t end = g + 1;
    while (end < keys_.size() && same(keys_[g], keys_[end])) ++end;
    size_t read_one = keys_[g].extent;
    for (size_t m = g; m < end; ++m) {  // the most sectors, then the first on disk
      const size_t x = keys_[m].extent;
      if (std::tie(extents[x].sectors, read_one) > std::tie(extents[read_one].sectors, x))
        read_one = x;
    }
    for (size_t m = g; m < end; ++m)
      if (keys_[m].extent != read_one) twins.push_back({keys_[m].extent, read_one});
    g = end;
  }
  return twins;
}

}  // namespace btrdedupe
