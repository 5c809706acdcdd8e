#include "src/fingerprint/compressed_twins.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "src/fingerprint/csum_ranges.h"

namespace btrdedupe {
namespace {

// A compressed extent's identity: algorithm, on-disk length, and where its sums lie.
struct CompressedKey {
  size_t extent = 0;
  uint64_t hash = 0;
  uint64_t disk_bytes = 0;
  uint8_t compression = 0;
  uint64_t sums_at = 0, sectors = 0, present = 0;
};

auto order(const CompressedKey& k) { return std::tie(k.hash, k.disk_bytes, k.compression); }

}  // namespace

btrfs::Result<std::vector<CompressedTwin>> compressed_twins(btrfs::TreeSource& csums,
                                                            const ScanResult& scan,
                                                            const std::vector<ExtentSums>& extents,
                                                            uint64_t* searches) {
  const uint32_t ss = scan.fs.sectorsize;
  const uint16_t cs = scan.fs.csum_size;
  std::vector<CompressedKey> keys;
  std::vector<DiskRange> ranges;
  uint64_t sectors = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    if (!extents[i].compressed) continue;
    const FileExtent& ref = scan.extents[extents[i].first_ref];
    CompressedKey k;
    k.extent = i;
    k.disk_bytes = ref.disk_num_bytes;
    k.compression = static_cast<uint8_t>(ref.compression);
    k.sums_at = sectors;
    k.sectors = (ref.disk_num_bytes + ss - 1) / ss;
    sectors += k.sectors;
    keys.push_back(k);
    ranges.push_back({ref.disk_bytenr, k.sectors});
  }
  std::vector<CompressedTwin> twins;
  if (keys.size() < 2) return twins;
  std::vector<uint8_t> sums(sectors * cs);
  auto read = for_each_csum(
      csums, scan.fs, ranges,
      [&](size_t r, uint64_t s, const uint8_t* sum) {
        std::memcpy(&sums[(keys[r].sums_at + s) * cs], sum, cs);
        ++keys[r].present;
      },
      searches);
  if (!read) return read.error();
  std::erase_if(keys, [](const CompressedKey& k) { return !k.sectors || k.present != k.sectors; });
  auto bytes_of = [&](const CompressedKey& k) { return &sums[k.sums_at * cs]; };
  for (auto& k : keys) k.hash = XXH3_64bits(bytes_of(k), k.sectors * cs);
  std::sort(keys.begin(), keys.end(),
            [](const CompressedKey& a, const CompressedKey& b) { return order(a) < order(b); });
  auto same = [&](const CompressedKey& a, const CompressedKey& b) {
    return order(a) == order(b) && std::memcmp(bytes_of(a), bytes_of(b), a.sectors * cs) == 0;
  };
  for (size_t g = 0; g < keys.size();) {
    size_t end = g + 1;
    while (end < keys.size() && same(keys[g], keys[end])) ++end;
    size_t read_one = keys[g].extent;
    for (size_t m = g; m < end; ++m) {  // the most sectors, then the first on disk
      const size_t x = keys[m].extent;
      if (std::tie(extents[x].sectors, read_one) > std::tie(extents[read_one].sectors, x))
        read_one = x;
    }
    for (size_t m = g; m < end; ++m)
      if (keys[m].extent != read_one) twins.push_back({keys[m].extent, read_one});
    g = end;
  }
  return twins;
}

}  // namespace btrdedupe
