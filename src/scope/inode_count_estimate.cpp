#include "src/scope/inode_count_estimate.h"

#include <linux/btrfs_tree.h>

#include <algorithm>

#include "btrfs/items.h"

namespace btrdedupe {

uint64_t highest_objectid(btrfs::TreeSource& trees, uint64_t subvolume) {
  auto first_at = [&](uint64_t x) -> std::optional<uint64_t> {
    btrfs::SearchKey key;
    key.tree_id = subvolume;
    key.min_objectid = x;
    key.max_objectid = btrfs::kMaxU64 - 1;  // objectids just below: the free space cache
    auto k = trees.first_key(key);
    if (!k || !*k) return std::nullopt;
    return (*k)->objectid;
  };
  const auto lo = first_at(0);
  if (!lo) return 0;
  uint64_t a = *lo, b = btrfs::kMaxU64 - 256;  // objectids past -256 are reserved ones
  while (a < b) {
    const uint64_t mid = a + (b - a) / 2 + 1;
    if (const auto x = first_at(mid); x && *x <= b) {
      a = *x;
    } else {
      b = mid - 1;
    }
  }
  return a;
}

namespace {

// Whether inode `ino` of the subvolume exists and is a regular file: one search of its
// INODE_ITEM alone. Unknown (an error) counts as no.
bool regular_file_at(btrfs::TreeSource& trees, uint64_t subvolume, uint64_t ino) {
  btrfs::SearchKey key;
  key.tree_id = subvolume;
  key.min_objectid = key.max_objectid = ino;
  key.min_type = key.max_type = BTRFS_INODE_ITEM_KEY;
  auto cursor = trees.search(key, 4096);
  auto item = cursor->next();
  if (!item || !*item) return false;
  const auto inode = btrfs::decode_inode_item((*item)->data);
  return inode && inode->is_regular();
}

}  // namespace

uint64_t estimate_regular_files(btrfs::TreeSource& trees, uint64_t subvolume,
                                unsigned probes) {
  const uint64_t first = BTRFS_FIRST_FREE_OBJECTID, last = highest_objectid(trees, subvolume);
  if (last < first || probes == 0) return 0;
  const uint64_t span = last - first + 1;
  const uint64_t n = std::min<uint64_t>(probes, span);
  uint64_t regular = 0;
  // The middle of each of n equal slices: every inode number when there are no more.
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t ino = first + static_cast<uint64_t>(
                                     (static_cast<long double>(i) + 0.5L) * span / n);
    regular += regular_file_at(trees, subvolume, ino);
  }
  return static_cast<uint64_t>(static_cast<long double>(regular) * span / n + 0.5L);
}

uint64_t files_held_at_once(const std::vector<SubvolumeFiles>& subvolumes) {
  uint64_t kept = 0, largest_folding = 0;
  for (const auto& s : subvolumes) {
    if (s.folds) {
      largest_folding = std::max(largest_folding, s.files);
    } else {
      kept += s.files;
    }
  }
  return std::max(kept, largest_folding);
}

}  // namespace btrdedupe
