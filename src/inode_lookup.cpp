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

btrfs::Result<void> SubvolumeInodes::for_each_item(
    uint64_t objectid, uint8_t min_type, uint8_t max_type,
    const std::function<btrfs::Result<void>(const btrfs::TreeItem&)>& each) {
  btrfs::SearchKey key;
  key.tree_id = subvolume_;
  key.min_objectid = key.max_objectid = objectid;
  key.min_type = min_type;
  key.max_type = max_type;
  btrfs::TreeSearch search(fd_, key, 64 * 1024);
  btrfs::Result<void> result;
  for (;;) {
    auto next = search.next();
    if (!next) {
      result = next.error();
      break;
    }
    if (!*next) break;
    ++items_;
    if (result = each(**next); !result) break;
  }
  calls_ += search.ioctl_calls();
  if (!result) return in_subvolume(subvolume_, result.error());
  return {};
}

btrfs::Result<std::optional<InodeState>> SubvolumeInodes::read(uint64_t inode, bool with_extents) {
  InodeState state;
  bool found = false;
  auto ok = for_each_item(
      inode, BTRFS_INODE_ITEM_KEY, with_extents ? BTRFS_EXTENT_DATA_KEY : BTRFS_INODE_EXTREF_KEY,
      [&](const btrfs::TreeItem& it) -> btrfs::Result<void> {
        if (it.type == BTRFS_INODE_ITEM_KEY) {
          auto item = btrfs::decode_inode_item(it.data);
          if (!item) return item.error();
          state.item = *item;
          found = true;
        } else if ((it.type == BTRFS_INODE_REF_KEY || it.type == BTRFS_INODE_EXTREF_KEY) &&
                   state.parent == 0) {
          auto refs = it.type == BTRFS_INODE_REF_KEY
                          ? btrfs::decode_inode_refs(it.offset, it.data)
                          : btrfs::decode_inode_extrefs(it.data);
          if (refs && !refs->empty()) {
            state.parent = (*refs)[0].parent;
            state.name = std::move((*refs)[0].name);
          }
        } else if (it.type == BTRFS_EXTENT_DATA_KEY) {
          auto fe = btrfs::decode_file_extent_item(it.data);
          if (!fe) return fe.error();
          add_extent(it.offset, *fe, state);
        }
        return {};
      });
  if (!ok) return ok.error();
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
  std::vector<uint64_t> out;
  auto ok = for_each_item(dir, BTRFS_DIR_INDEX_KEY, BTRFS_DIR_INDEX_KEY,
                          [&](const btrfs::TreeItem& it) -> btrfs::Result<void> {
                            auto target = btrfs::decode_dir_index(it.data);
                            if (!target) return target.error();
                            if (target->type == BTRFS_INODE_ITEM_KEY)
                              out.push_back(target->objectid);
                            return {};
                          });
  if (!ok) return ok.error();
  return out;
}

}  // namespace btrdedupe
