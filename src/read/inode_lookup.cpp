#include "src/read/inode_lookup.h"

#include <linux/btrfs_tree.h>

#include <algorithm>


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
    p.prealloc_bytenrs.push_back(fe.disk_bytenr);
  } else if (fe.is_hole()) {
    ++p.hole_extents;
    p.hole_bytes += fe.length();
  } else {
    out.extents.push_back({0, fe.compression, false, file_offset, fe.length(), fe.disk_bytenr,
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
  // Room for the largest item beside an inode's few: one call per read (TreeSearch).
  const auto cursor = trees_->search(key, 96 * 1024);
  btrfs::ItemCursor& search = *cursor;
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

btrfs::Result<bool> add_inode_item(const btrfs::TreeItem& it, InodeState& state) {
  if (it.type == BTRFS_INODE_ITEM_KEY) {
    auto item = btrfs::decode_inode_item(it.data);
    if (!item) return item.error();
    state.item = *item;
    return true;
  }
  if ((it.type == BTRFS_INODE_REF_KEY || it.type == BTRFS_INODE_EXTREF_KEY) &&
      state.parent == 0) {
    auto refs = it.type == BTRFS_INODE_REF_KEY ? btrfs::decode_inode_refs(it.offset, it.data)
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
  return false;
}

btrfs::Result<std::optional<InodeState>> SubvolumeInodes::read(uint64_t inode, bool with_extents) {
  InodeState state;
  bool found = false;
  auto ok = for_each_item(
      inode, BTRFS_INODE_ITEM_KEY, with_extents ? BTRFS_EXTENT_DATA_KEY : BTRFS_INODE_EXTREF_KEY,
      [&](const btrfs::TreeItem& it) -> btrfs::Result<void> {
        auto is_item = add_inode_item(it, state);
        if (!is_item) return is_item.error();
        found = found || *is_item;
        return {};
      });
  if (!ok) return ok.error();
  if (!found) return std::optional<InodeState>{};
  return std::optional<InodeState>{std::move(state)};
}

btrfs::Result<uint64_t> SubvolumeInodes::read_from(
    uint64_t first, const std::function<bool(uint64_t inode, InodeState& state)>& each,
    uint64_t last) {
  btrfs::SearchKey key;
  key.tree_id = subvolume_;
  key.min_objectid = std::max<uint64_t>(first, BTRFS_FIRST_FREE_OBJECTID);
  key.max_objectid = last;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  const auto cursor = trees_->search(key, 1 << 20);
  btrfs::ItemCursor& search = *cursor;
  InodeState state;
  uint64_t current = 0;
  bool found = false;
  // Hands the inode whose items were read; false: the caller wants no more.
  auto hand = [&]() -> bool {
    bool more = true;
    if (found) {
      if (state.item.is_directory() && state.parent != 0)
        directories_.try_emplace(current, Name{state.parent, state.name});
      more = each(current, state);
    }
    state = InodeState{};
    found = false;
    return more;
  };
  btrfs::Result<uint64_t> result = uint64_t{0};
  for (;;) {
    auto next = search.next();
    if (!next) {
      result = next.error();
      break;
    }
    if (!*next) {
      hand();
      break;
    }
    const btrfs::TreeItem& it = **next;
    ++items_;
    if (it.type != BTRFS_INODE_ITEM_KEY && it.type != BTRFS_INODE_REF_KEY &&
        it.type != BTRFS_INODE_EXTREF_KEY && it.type != BTRFS_EXTENT_DATA_KEY)
      continue;  // dir items, xattrs: inside the key box but not needed
    if (it.objectid != current) {
      if (!hand()) {
        result = it.objectid;
        break;
      }
      current = it.objectid;
    }
    auto is_item = add_inode_item(it, state);
    if (!is_item) {
      result = is_item.error();
      break;
    }
    found = found || *is_item;
  }
  calls_ += search.ioctl_calls();
  if (!result) return in_subvolume(subvolume_, result.error());
  return result;
}

btrfs::Result<void> SubvolumeInodes::read_each(
    const std::vector<uint64_t>& sorted,
    const std::function<btrfs::Result<void>(uint64_t inode, const InodeState* state)>& each) {
  // Inodes this close share a sequential read: their items are a leaf or two apart.
  constexpr uint64_t kRunGap = 32;
  for (size_t i = 0; i < sorted.size();) {
    size_t end = i + 1;
    while (end < sorted.size() && sorted[end] - sorted[end - 1] <= kRunGap) ++end;
    if (end == i + 1) {
      auto state = read(sorted[i], true);
      if (!state) return state.error();
      if (auto ok = each(sorted[i], *state ? &**state : nullptr); !ok) return ok;
      i = end;
      continue;
    }
    size_t next = i;
    btrfs::Result<void> failed;
    auto read = read_from(sorted[i], [&](uint64_t inode, InodeState& state) {
      for (; next < end && sorted[next] < inode; ++next)
        if (failed = each(sorted[next], nullptr); !failed) return false;
      if (next < end && sorted[next] == inode) {
        if (failed = each(inode, &state); !failed) return false;
        ++next;
      }
      return next < end;
    }, sorted[end - 1]);
    if (!read) return read.error();
    if (!failed) return failed;
    for (; next < end; ++next)  // past the tree's end
      if (auto ok = each(sorted[next], nullptr); !ok) return ok;
    i = end;
  }
  return {};
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

bool same_layout(const InodeState& a, const InodeState& b) {
  if (a.item.size != b.item.size || a.item.nodatasum() != b.item.nodatasum() ||
      a.extents.size() != b.extents.size())
    return false;
  for (size_t i = 0; i < a.extents.size(); ++i) {
    const FileExtent &x = a.extents[i], &y = b.extents[i];
    if (x.file_offset != y.file_offset || x.length != y.length ||
        x.disk_bytenr != y.disk_bytenr || x.extent_offset != y.extent_offset)
      return false;
  }
  return true;
}

}  // namespace btrdedupe
