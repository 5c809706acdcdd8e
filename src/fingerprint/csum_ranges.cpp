#include "src/fingerprint/csum_ranges.h"

#include <linux/btrfs_tree.h>

#include <algorithm>

#include "btrfs/items.h"

namespace btrdedupe {
namespace {

// Ranges closer than this share one tree search over the gap.
constexpr uint64_t kCsumSearchGap = 8ULL << 20;

}  // namespace

btrfs::Result<void> for_each_csum(
    btrfs::TreeSource& csums, const btrfs::FsInfo& fs, std::span<const DiskRange> ranges,
    const std::function<void(size_t range, uint64_t sector, const uint8_t* sums, uint64_t count)>&
        take,
    uint64_t* searches) {
  const uint32_t ss = fs.sectorsize;
  const uint16_t cs = fs.csum_size;
  const uint64_t item_span = uint64_t{fs.nodesize} / cs * ss;  // widest possible item
  auto end_of = [&](size_t i) { return ranges[i].start + ranges[i].sectors * ss; };
  for (size_t w = 0; w < ranges.size();) {
    // One cluster: [w, w_end) with small gaps between ranges.
    size_t w_end = w + 1;
    uint64_t end = end_of(w);
    while (w_end < ranges.size() && ranges[w_end].start < end + kCsumSearchGap)
      end = std::max(end, end_of(w_end++));
    const uint64_t start = ranges[w].start;
    btrfs::SearchKey key;
    key.tree_id = BTRFS_CSUM_TREE_OBJECTID;
    key.min_objectid = key.max_objectid = BTRFS_EXTENT_CSUM_OBJECTID;
    key.min_type = key.max_type = BTRFS_EXTENT_CSUM_KEY;
    key.min_offset = start > item_span ? start - item_span : 0;
    key.max_offset = end - 1;
    const auto cursor = csums.search(key, 1 << 20);
    btrfs::ItemCursor& search = *cursor;
    size_t p = w;  // first range of the cluster that may still overlap
    for (;;) {
      auto next = search.next();
      if (!next)
        return btrfs::Error{next.error().code, "reading the csum tree: " + next.error().context};
      if (!*next) break;
      auto item = btrfs::decode_csum_item((*next)->offset, (*next)->data, cs);
      if (!item) continue;
      const uint64_t i_start = item->disk_start, i_end = i_start + item->sectors() * ss;
      while (p < w_end && end_of(p) <= i_start) ++p;
      for (size_t q = p; q < w_end && ranges[q].start < i_end; ++q) {
        const uint64_t from = std::max(i_start, ranges[q].start), to = std::min(i_end, end_of(q));
        if (from < to)
          take(q, (from - ranges[q].start) / ss, &item->sums[(from - i_start) / ss * cs],
               (to - from) / ss);
      }
    }
    if (searches) *searches += search.ioctl_calls();
    w = w_end;
  }
  return {};
}

}  // namespace btrdedupe
