#include "btrfs/extent_tree.h"

#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include "btrfs/tree_search.h"

namespace btrfs {
namespace {

SearchKey data_extents(uint64_t first, uint64_t last) {
  SearchKey key;
  key.tree_id = BTRFS_EXTENT_TREE_OBJECTID;
  key.min_objectid = first;
  key.max_objectid = last;
  key.min_type = key.max_type = BTRFS_EXTENT_ITEM_KEY;
  return key;
}

// An EXTENT_ITEM allocated by transaction `born_by` or before (btrfs_extent_item: refs,
// then the generation that allocated it).
bool born_by_then(const TreeItem& item, uint64_t born_by) {
  if (item.type != BTRFS_EXTENT_ITEM_KEY) return false;
  if (born_by == UINT64_MAX) return true;
  if (item.data.size() < 16) return true;  // unreadable: as before, by address alone
  uint64_t generation = 0;
  for (int b = 7; b >= 0; --b) generation = (generation << 8) | item.data[8 + b];
  return generation <= born_by;
}

// A gap between wanted addresses past which a stream stops and a new search starts: a
// stream pays for every item in between (a 16 KiB leaf holds ~300 extent items, of ~4 MiB
// average spacing on a data-heavy filesystem), a new search one root-to-leaf descent.
// (A window of a windowed run wants the extents of a few of its copies' files: one stream
// over their span read the extent items of every copy in between, ~1 s of a 4-copy run.)
constexpr uint64_t kStreamGap = 64ULL << 20;

// allocated[i] for bytenrs[first, last] (inclusive) by one streaming search.
Result<void> stream_over(int fd, std::span<const uint64_t> bytenrs, size_t first, size_t last,
                         uint64_t born_by, std::vector<bool>& allocated) {
  // One address: a probe, whose one item needs no large buffer.
  TreeSearch search(fd, data_extents(bytenrs[first], bytenrs[last]),
                    first == last ? 4096 : 256 * 1024);
  size_t i = first;
  while (i <= last) {
    auto item = search.next();
    if (!item) return item.error();
    if (!*item) break;
    const uint64_t at = (*item)->objectid;
    while (i <= last && bytenrs[i] < at) ++i;
    if (i <= last && bytenrs[i] == at) allocated[i++] = born_by_then(**item, born_by);
  }
  return {};
}

}  // namespace

Result<std::vector<bool>> extents_allocated(int fd, std::span<const uint64_t> bytenrs,
                                            uint64_t born_by) {
  std::vector<bool> allocated(bytenrs.size(), false);
  // One stream per run of addresses no more than kStreamGap apart: an address far from
  // the others is a run of its own, a single-item search.
  for (size_t first = 0, last = 0; first < bytenrs.size(); first = ++last) {
    while (last + 1 < bytenrs.size() && bytenrs[last + 1] - bytenrs[last] <= kStreamGap) ++last;
    if (auto ok = stream_over(fd, bytenrs, first, last, born_by, allocated); !ok)
      return ok.error();
  }
  return allocated;
}

Result<uint64_t> data_extent_disk_bytes(int fd, uint64_t bytenr) {
  auto k = first_item_key(fd, data_extents(bytenr, bytenr));
  if (!k) return k.error();
  if (!k->has_value() || (*k)->type != BTRFS_EXTENT_ITEM_KEY)
    return Error{ENOENT, "no data extent at " + std::to_string(bytenr)};
  return (*k)->offset;
}

}  // namespace btrfs
