#include "btrfs/csum_tree.h"

#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cstring>

#include "btrfs/items.h"
#include "btrfs/tree_search.h"

namespace btrfs {

size_t SectorSums::missing() const {
  return static_cast<size_t>(std::count(present.begin(), present.end(), false));
}

namespace {

Result<void> check_geometry(const FsInfo& info) {
  if (info.sectorsize == 0 || info.csum_size == 0 || info.nodesize == 0)
    return Error{EINVAL, "read_sector_sums: FsInfo without sectorsize, nodesize or csum_size"};
  return {};
}

// Copies the part of `item` that overlaps `out` and marks those sectors present.
Result<void> merge_item(const CsumItem& item, SectorSums& out) {
  const uint64_t ss = out.sectorsize;
  if (item.disk_start % ss != 0)
    return Error{EUCLEAN, "EXTENT_CSUM item at " + std::to_string(item.disk_start) +
                              " is not aligned to the sector size " + std::to_string(ss)};
  const uint64_t item_first = item.disk_start / ss;
  const uint64_t item_end = item_first + item.sectors();  // in sectors, exclusive
  const uint64_t want_first = out.disk_start / ss;
  const uint64_t want_end = want_first + out.sectors();
  const uint64_t first = std::max(item_first, want_first);
  const uint64_t end = std::min(item_end, want_end);
  for (uint64_t s = first; s < end; ++s) {
    std::memcpy(out.sums.data() + (s - want_first) * out.csum_size,
                item.sums.data() + (s - item_first) * out.csum_size, out.csum_size);
    out.present[s - want_first] = true;
  }
  return {};
}

}  // namespace

Result<SectorSums> read_sector_sums(int fd, const FsInfo& info, uint64_t disk_bytenr,
                                    uint64_t length) {
  if (auto ok = check_geometry(info); !ok) return ok.error();
  const uint64_t ss = info.sectorsize;
  if (disk_bytenr % ss != 0)
    return Error{EINVAL, "read_sector_sums: disk bytenr " + std::to_string(disk_bytenr) +
                             " is not aligned to the sector size " + std::to_string(ss)};
  const uint64_t sectors = length / ss + (length % ss != 0);
  if (sectors > (kMaxU64 - disk_bytenr) / ss)
    return Error{EINVAL, "read_sector_sums: range at " + std::to_string(disk_bytenr) + " of " +
                             std::to_string(length) + " bytes wraps around"};
  SectorSums out;
  out.disk_start = disk_bytenr;
  out.sectorsize = info.sectorsize;
  out.csum_size = info.csum_size;
  out.sums.assign(sectors * info.csum_size, 0);
  out.present.assign(sectors, false);
  if (sectors == 0) return out;

  // An item covering disk_bytenr can start up to one leaf's worth of sums earlier.
  const uint64_t lookback = uint64_t{info.nodesize} / info.csum_size * ss;
  SearchKey key;
  key.tree_id = BTRFS_CSUM_TREE_OBJECTID;
  key.min_objectid = key.max_objectid = BTRFS_EXTENT_CSUM_OBJECTID;
  key.min_type = key.max_type = BTRFS_EXTENT_CSUM_KEY;
  key.min_offset = disk_bytenr > lookback ? disk_bytenr - lookback : 0;
  key.max_offset = disk_bytenr + sectors * ss - 1;
  TreeSearch search(fd, key, 64 * 1024);
  for (;;) {
    auto next = search.next();
    if (!next) return next.error();
    if (!*next) break;
    const TreeItem& raw = **next;
    auto item = decode_csum_item(raw.offset, raw.data, info.csum_size);
    if (!item) return item.error();
    if (auto merged = merge_item(*item, out); !merged) return merged.error();
  }
  return out;
}

}  // namespace btrfs
