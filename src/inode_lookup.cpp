#include "src/inode_lookup.h"

#include <linux/btrfs_tree.h>

#include "btrfs/tree_search.h"

namespace btrdedupe {
namespace {

constexpr int kMaxDepth = 4096;  // a loop in corrupt refs must end

btrfs::Error in_subvolume(uint64_t subvolume, const btrfs::Error& e) {
  return btrfs::Error{e.code, "subvolume " + std::to_string(subvolume) + ": " + e.context};
}

void add_extent(uint64_t file_offset, const btrfs::FileExtentItem& fe, InodeState& out) {
  auto& p = out.passed_over;
  if (fe.is_inline()) {
    ++p.inline_extents;
    p.inline_bytes += fe.length();
  } else if (fe.is_prealloc()) {
    ++p.prealloc_extents;
    p.prealloc_bytes += fe.length();
  } else if (fe.is_hole()) {
    ++p.hole_extents;
    p.hole_bytes += fe.length();
  } else {
    out.extents.push_back({0, fe.compression, file_offset, fe.length(), fe.disk_bytenr,
                           fe.disk_num_bytes, fe.offset});
  }
}

}  // namespace

btrfs::Result<std::optional<InodeState>> SubvolumeInodes::read(uint64_t inode, bool with_extents) {
  btrfs::SearchKey key;
  key.tree_id = subvolume_;
  key.min_objectid = key.max_objectid = inode;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = with_extents ? BTRFS_EXTENT_DATA_KEY : BTRFS_INODE_EXTREF_KEY;
  btrfs::TreeSearch search(fd_, key, 64 * 1024);
  InodeState state;
  bool found = false;
  for (;;) {
    auto next = search.next();
    if (!next) {
      calls_ += search.ioctl_calls();
      return in_subvolume(subvolume_, next.error());
    }
    if (!*next) break;
    const btrfs::TreeItem& it = **next;
    ++items_;
    if (it.type == BTRFS_INODE_ITEM_KEY) {
      auto item = btrfs::decode_inode_item(it.data);
      if (!item) return in_subvolume(subvolume_, item.error());
      state.item = *item;
      found = true;
    } else if ((it.type == BTRFS_INODE_REF_KEY || it.type == BTRFS_INODE_EXTREF_KEY) &&
               state.parent == 0) {
      auto refs = it.type == BTRFS_INODE_REF_KEY ? btrfs::decode_inode_refs(it.offset, it.data)
                                                 : btrfs::decode_inode_extrefs(it.data);
      if (refs && !refs->empty()) {
        state.parent = (*refs)[0].parent;
        state.name = std::move((*refs)[0].name);
      }
    } else if (it.type == BTRFS_EXTENT_DATA_KEY) {
      auto fe = btrfs::decode_file_extent_item(it.data);
      if (!fe) return in_subvolume(subvolume_, fe.error());
      add_extent(it.offset, *fe, state);
    }
  }
  calls_ += search.ioctl_calls();
  if (!found) return std::optional<InodeState>{};
  return std::optional<InodeState>{std::move(state)};
}

btrfs::Result<std::optional<SubvolumeInodes::Name>> SubvolumeInodes::name_of_directory(uint64_t dir) {
  if (auto it = directories_.find(dir); it != directories_.end()) return it->second;
  auto state = read(dir, false);
  if (!state) return state.error();
  std::optional<Name> name;
  if (*state && (*state)->parent != 0) name = Name{(*state)->parent, std::move((*state)->name)};
  directories_[dir] = name;
  return name;
}

btrfs::Result<std::optional<std::string>> SubvolumeInodes::directory_below(uint64_t dir,
                                                                           uint64_t top) {
  std::vector<std::string> parts;
  for (int depth = 0; dir != top; ++depth) {
    auto name = name_of_directory(dir);
    if (!name) return name.error();
    if (!*name || (*name)->parent == dir || depth > kMaxDepth) return std::optional<std::string>{};
    parts.push_back((*name)->name);
    dir = (*name)->parent;
  }
  std::string path;
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) path += (path.empty() ? "" : "/") + *p;
  return std::optional<std::string>{std::move(path)};
}

btrfs::Result<std::vector<uint64_t>> SubvolumeInodes::children(uint64_t dir) {
  btrfs::SearchKey key;
  key.tree_id = subvolume_;
  key.min_objectid = key.max_objectid = dir;
  key.min_type = key.max_type = BTRFS_DIR_INDEX_KEY;
  btrfs::TreeSearch search(fd_, key, 64 * 1024);
  std::vector<uint64_t> out;
  for (;;) {
    auto next = search.next();
    if (!next) {
      calls_ += search.ioctl_calls();
      return in_subvolume(subvolume_, next.error());
    }
    if (!*next) break;
    ++items_;
    auto target = btrfs::decode_dir_index((*next)->data);
    if (!target) return in_subvolume(subvolume_, target.error());
    if (target->type == BTRFS_INODE_ITEM_KEY) out.push_back(target->objectid);
  }
  calls_ += search.ioctl_calls();
  return out;
}

}  // namespace btrdedupe
