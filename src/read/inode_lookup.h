// Targeted reads of single inodes of a subvolume's tree: one TREE_SEARCH_V2 over one
// objectid, instead of reading the whole tree. What an incremental run needs to look at
// the few files that changed, the catalogued files they may duplicate, and their paths.
#pragma once

#include <linux/btrfs_tree.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "btrfs/items.h"
#include "btrfs/result.h"
#include "btrfs/tree_source.h"
#include "src/read/file_extent.h"

namespace btrdedupe {

struct InodeState {
  btrfs::InodeItem item;
  uint64_t parent = 0;  // directory of its first name; 0: it has none
  std::string name;     // that first name
  // Regular extents (FileExtent::file is 0), when read with extents; the rest counted.
  std::vector<FileExtent> extents;
  PassedOver passed_over;
};

// Adds one item of an inode (INODE_ITEM, its first INODE_REF or INODE_EXTREF, EXTENT_DATA)
// to `state`; true when it was the INODE_ITEM. Other items are ignored.
btrfs::Result<bool> add_inode_item(const btrfs::TreeItem& item, InodeState& state);

// Whether two inodes map the same extents at the same offsets (same size, same data-sum
// flag): a snapshot's file that is still its origin's, or a file since changed.
bool same_layout(const InodeState& a, const InodeState& b);

class SubvolumeInodes {
 public:
  // trees: where the subvolume's tree is searched; it must outlive this object.
  SubvolumeInodes(btrfs::TreeSource& trees, uint64_t subvolume)
      : trees_(&trees), subvolume_(subvolume) {}

  // The inode's item, first name and (with_extents) its extents; nullopt when it does not
  // exist (deleted).
  btrfs::Result<std::optional<InodeState>> read(uint64_t inode, bool with_extents);
  // Reads the subvolume's inodes from `first` on, in inode order, in one sequential search
  // (the whole tree's leaves once, not a search per inode), and calls `each` with every
  // inode's item, first name and extents once all are read. `each` returns false to stop:
  // the result is then the inode to continue from; 0 when the tree ended. Directories seen
  // are remembered for directory_below(). `last`: no inode past it is read (the kernel
  // fills each search's buffer up to it, so a short range asks for no more).
  btrfs::Result<uint64_t> read_from(
      uint64_t first, const std::function<bool(uint64_t inode, InodeState& state)>& each,
      uint64_t last = BTRFS_LAST_FREE_OBJECTID);
  // Reads inodes `sorted` (ascending) with their extents and calls `each` with each one's
  // state, or nullptr when it does not exist. Runs of nearby inodes are read in one
  // sequential search (read_from) instead of a search each: the twins a window looks up
  // are mostly a dense range of an earlier copy. An error of `each` ends the reads.
  btrfs::Result<void> read_each(
      const std::vector<uint64_t>& sorted,
      const std::function<btrfs::Result<void>(uint64_t inode, const InodeState* state)>& each);
  // Path of directory `dir` relative to directory `top` ("" when they are the same);
  // nullopt when `dir` is not below `top`. Directories are cached: siblings share them.
  btrfs::Result<std::optional<std::string>> directory_below(uint64_t dir, uint64_t top);
  // Inodes the directory's entries point at (its DIR_INDEX items; subvolumes left out).
  btrfs::Result<std::vector<uint64_t>> children(uint64_t dir);

  uint64_t subvolume() const { return subvolume_; }
  uint64_t items() const { return items_; }
  uint64_t calls() const { return calls_; }

 private:
  struct Name {
    uint64_t parent = 0;
    std::string name;
  };
  btrfs::Result<std::optional<Name>> name_of_directory(uint64_t dir);
  // Searches one objectid's items of types [min_type, max_type], counting items and calls,
  // and calls `each` with every item; an error of the search or of `each` ends it.
  btrfs::Result<void> for_each_item(
      uint64_t objectid, uint8_t min_type, uint8_t max_type,
      const std::function<btrfs::Result<void>(const btrfs::TreeItem&)>& each);

  btrfs::TreeSource* trees_;  // a pointer: readers are kept in maps and moved
  uint64_t subvolume_;
  std::unordered_map<uint64_t, std::optional<Name>> directories_;
  uint64_t items_ = 0, calls_ = 0;
};

}  // namespace btrdedupe
