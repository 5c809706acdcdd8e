// Synthetic subvolume trees for unit tests of the tree readers: items built with the
// encoders of btrfs/items.h into a MemoryTreeSource, keyed as the kernel keys them.
#pragma once

#include <linux/btrfs_tree.h>

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/items.h"
#include "btrfs/subvolume.h"
#include "support/memory_tree_source.h"

namespace btrdedupe::test {

// The subvolume list's entry of subvolume `id`, at `path` directly below the top one.
inline btrfs::Subvolume subvolume_below_top(uint64_t id, const std::string& path) {
  btrfs::Subvolume sv;
  sv.id = id;
  sv.path = path;
  sv.parent_id = BTRFS_FS_TREE_OBJECTID;
  return sv;
}

// One subvolume's tree in `source`. Inode 256 is its top directory (named ".." in itself,
// as btrfs names it); every item is written in generation `generation` unless changed.
class SyntheticTree {
 public:
  SyntheticTree(MemoryTreeSource& source, uint64_t tree) : source_(source), tree_(tree) {
    dir(BTRFS_FIRST_FREE_OBJECTID, BTRFS_FIRST_FREE_OBJECTID, "..");
  }

  uint64_t generation = 10;  // of the items added from here on

  void dir(uint64_t ino, uint64_t parent, const std::string& name) {
    inode(ino, 040755, 0);
    name_of(ino, parent, name);
  }
  // A regular file's INODE_ITEM and first name; its extents: extent(), inline_extent()...
  void file(uint64_t ino, uint64_t parent, const std::string& name, uint64_t size,
            uint64_t flags = 0) {
    inode(ino, 0100644, size, flags);
    name_of(ino, parent, name);
  }
  void inode(uint64_t ino, uint32_t mode, uint64_t size, uint64_t flags = 0) {
    btrfs::InodeItem it;
    it.generation = it.transid = generation;
    it.mode = mode;
    it.size = size;
    it.flags = flags;
    it.nlink = 1;
    it.mtime = {static_cast<int64_t>(1700000000 + ino), static_cast<uint32_t>(ino)};
    add(ino, BTRFS_INODE_ITEM_KEY, 0, btrfs::encode_inode_item(it));
  }
  void name_of(uint64_t ino, uint64_t parent, const std::string& name) {
    const btrfs::InodeName n{parent, ++index_, name};
    add(ino, BTRFS_INODE_REF_KEY, parent, btrfs::encode_inode_refs({&n, 1}));
  }
  // A second name in another directory, in an INODE_EXTREF (keyed by a name hash; any
  // offset above the INODE_REF keeps key order).
  void extref(uint64_t ino, uint64_t parent, const std::string& name) {
    const btrfs::InodeName n{parent, ++index_, name};
    add(ino, BTRFS_INODE_EXTREF_KEY, parent, btrfs::encode_inode_extrefs({&n, 1}));
  }
  // A DIR_INDEX entry of `dir` pointing at `child` (an inode, or a subvolume's ROOT_ITEM).
  void entry(uint64_t dir, uint64_t child, const std::string& name,
             uint8_t type = BTRFS_INODE_ITEM_KEY) {
    add(dir, BTRFS_DIR_INDEX_KEY, ++index_,
        btrfs::encode_dir_index({child, type}, name, BTRFS_FT_REG_FILE));
  }
  // A regular extent at file offset `at`: `length` bytes of the extent at disk `bytenr`.
  void extent(uint64_t ino, uint64_t at, uint64_t length, uint64_t bytenr,
              btrfs::Compression compression = btrfs::Compression::None) {
    btrfs::FileExtentItem fe = regular(length);
    fe.disk_bytenr = bytenr;
    fe.compression = compression;
    add(ino, BTRFS_EXTENT_DATA_KEY, at, btrfs::encode_file_extent_item(fe));
  }
  void hole(uint64_t ino, uint64_t at, uint64_t length) {
    add(ino, BTRFS_EXTENT_DATA_KEY, at, btrfs::encode_file_extent_item(regular(length)));
  }
  void prealloc(uint64_t ino, uint64_t at, uint64_t length, uint64_t bytenr) {
    btrfs::FileExtentItem fe = regular(length);
    fe.type = btrfs::FileExtentType::Prealloc;
    fe.disk_bytenr = bytenr;
    add(ino, BTRFS_EXTENT_DATA_KEY, at, btrfs::encode_file_extent_item(fe));
  }
  void inline_extent(uint64_t ino, const std::string& bytes) {
    btrfs::FileExtentItem fe;
    fe.generation = generation;
    fe.type = btrfs::FileExtentType::Inline;
    fe.ram_bytes = bytes.size();
    fe.inline_data = {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
    add(ino, BTRFS_EXTENT_DATA_KEY, 0, btrfs::encode_file_extent_item(fe));
  }
  // An xattr: inside the readers' key box (type 24, between refs and extents) but not read.
  void xattr(uint64_t ino) { add(ino, BTRFS_XATTR_ITEM_KEY, 1, std::vector<uint8_t>(40, 7)); }
  // Every item of `ino` gone, as when the file is deleted.
  void remove_inode(uint64_t ino) {
    for (uint8_t type : {uint8_t{BTRFS_INODE_ITEM_KEY}, uint8_t{BTRFS_INODE_REF_KEY},
                         uint8_t{BTRFS_INODE_EXTREF_KEY}, uint8_t{BTRFS_XATTR_ITEM_KEY},
                         uint8_t{BTRFS_EXTENT_DATA_KEY}})
      while (auto k = source_.first_key(inode_box(ino, type)))
        if (!*k || !source_.remove(tree_, **k)) break;
  }

 private:
  btrfs::FileExtentItem regular(uint64_t length) const {
    btrfs::FileExtentItem fe;
    fe.generation = generation;
    fe.type = btrfs::FileExtentType::Regular;
    fe.ram_bytes = fe.disk_num_bytes = fe.num_bytes = length;
    return fe;
  }
  btrfs::SearchKey inode_box(uint64_t ino, uint8_t type) const {
    btrfs::SearchKey key;
    key.tree_id = tree_;
    key.min_objectid = key.max_objectid = ino;
    key.min_type = key.max_type = type;
    return key;
  }
  void add(uint64_t ino, uint8_t type, uint64_t offset, std::vector<uint8_t> data) {
    source_.add(tree_, {ino, type, offset}, std::move(data));
  }

  MemoryTreeSource& source_;
  uint64_t tree_;
  uint64_t index_ = 1;
};

}  // namespace btrdedupe::test
