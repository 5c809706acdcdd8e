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

}  // namespace

Result<std::vector<bool>> extents_allocated(int fd, std::span<const uint64_t> bytenrs,
                                            uint64_t born_by) {
  std::vector<bool> allocated(bytenrs.size(), false);
  if (bytenrs.empty()) return allocated;
  // A probe costs a root-to-leaf descent; a stream, every item in between. Probe when the
  // addresses are few for their span (a 16 KiB leaf holds ~300 extent items of ~4 MiB
  // average spacing on a data-heavy filesystem: about one per 10 MiB of address space).
  const uint64_t span = bytenrs.back() - bytenrs.front();
  if (bytenrs.size() < 64 || span / bytenrs.size() > (64ULL << 20)) {
    for (size_t i = 0; i < bytenrs.size(); ++i) {
      TreeSearch probe(fd, data_extents(bytenrs[i], bytenrs[i]), 4096);
      auto item = probe.next();
      if (!item) return item.error();
      allocated[i] = item->has_value() && born_by_then(**item, born_by);
    }
    return allocated;
  }
  TreeSearch search(fd, data_extents(bytenrs.front(), bytenrs.back()));
  size_t i = 0;
  while (i < bytenrs.size()) {
    auto item = search.next();
    if (!item) return item.error();
    if (!*item) break;
    const uint64_t at = (*item)->objectid;
    while (i < bytenrs.size() && bytenrs[i] < at) ++i;
    if (i < bytenrs.size() && bytenrs[i] == at) allocated[i++] = born_by_then(**item, born_by);
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
