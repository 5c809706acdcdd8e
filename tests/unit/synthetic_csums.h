// Csum items for synthetic scans (tests/unit/synthetic_fs.h): the csum tree a fingerprint
// reads, in memory.
#pragma once

#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "tests/support/memory_tree_source.h"
#include "tests/unit/synthetic_fs.h"

namespace btrdedupe {

// One csum item per physical extent of `fs` (keyed by its disk address), holding the sums
// of the sectors its files' sums say it holds; `split`: two items per extent instead.
inline void add_csum_items(test::MemoryTreeSource& tree, const SyntheticFs& fs, bool split = false) {
  std::map<uint64_t, std::vector<uint8_t>> by_extent;
  for (const FileExtent& e : fs.scan.extents) {
    auto& sums = by_extent[e.disk_bytenr];
    sums.resize(std::max<size_t>(sums.size(), (e.extent_offset + e.length) / kSector * 4));
    const FileSumsView file = fs.fp.files[e.file];
    for (uint64_t s = 0; s < e.length / kSector; ++s)
      std::memcpy(&sums[(e.extent_offset / kSector + s) * 4],
                  &file.sums[(e.file_offset / kSector + s) * 4], 4);
  }
  for (auto& [bytenr, sums] : by_extent) {
    const size_t half = split && sums.size() >= 8 ? sums.size() / 8 * 4 : sums.size();
    tree.add(BTRFS_CSUM_TREE_OBJECTID, {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr},
             {sums.begin(), sums.begin() + static_cast<long>(half)});
    if (half < sums.size())
      tree.add(BTRFS_CSUM_TREE_OBJECTID, {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr + half / 4 * kSector},
               {sums.begin() + static_cast<long>(half), sums.end()});
  }
}

}  // namespace btrdedupe
