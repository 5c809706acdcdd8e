// Reading one subvolume tree into a SubvolumeTree; why this is apart from the scan's walk:
// src/read/subvolume_tree_reader.h.
#include "src/read/subvolume_tree_reader.h"

#include <linux/btrfs_tree.h>

#include <optional>

#include "src/read/tree_warmup.h"

namespace btrdedupe {
namespace {

// Appends `name` to `arena` and returns its end there, or the arena's size (an empty name)
// past 4 GiB of names in one subvolume.
uint32_t add_name(std::string& arena, std::string_view name) {
  if (arena.size() + name.size() <= UINT32_MAX) arena += name;
  return static_cast<uint32_t>(arena.size());
}

// One subvolume tree's items in key order (read_subvolume_tree), into a SubvolumeTree and
// `out`: the inode the last items belong to, and what of it is kept so far.
class SubvolumeTreeReader {
 public:
  SubvolumeTreeReader(uint64_t subvol, ScanResult& out, bool names, uint64_t max_files,
                      const DropFile& drop)
      : out_(out), names_(names), max_files_(max_files), drop_(drop),
        where_("subvolume " + std::to_string(subvol)), open_extents_(out.extents.size()) {}

  const std::string& where() const { return where_; }
  SubvolumeTree take() { return std::move(tree_); }

  // An error ends the read.
  std::optional<btrfs::Error> add(const btrfs::TreeItem& it) {
    if (it.type != BTRFS_INODE_ITEM_KEY && it.type != BTRFS_INODE_REF_KEY &&
        it.type != BTRFS_INODE_EXTREF_KEY && it.type != BTRFS_EXTENT_DATA_KEY)
      return std::nullopt;  // dir items, xattrs: inside the key box but not needed
    if (it.objectid < current_) return std::nullopt;  // out of order: tree search never returns it
    if (it.objectid > current_) {
      finish_file();
      current_ = it.objectid;
      kind_ = Kind::kOther;
      named_ = false;
    }
    switch (it.type) {
      case BTRFS_INODE_ITEM_KEY:
        return add_inode(it);
      case BTRFS_INODE_REF_KEY:  // the first name is enough for reports
        if (kind_ != Kind::kOther) first_name(btrfs::decode_inode_refs(it.offset, it.data));
        return std::nullopt;
      case BTRFS_INODE_EXTREF_KEY:
        if (kind_ != Kind::kOther) first_name(btrfs::decode_inode_extrefs(it.data));
        return std::nullopt;
      default:  // BTRFS_EXTENT_DATA_KEY, after its INODE_ITEM in key order
        return add_extent(it);
    }
  }

  // The last file is complete once another inode's items begin (or the tree ends), and
  // only then can `drop` judge it.
  void finish_file() {
    if (!drop_ || kind_ != Kind::kFile) return;
    if (!drop_(tree_.files.back(), out_.extents.data() + open_extents_,
               out_.extents.data() + out_.extents.size()))
      return;
    const auto file = static_cast<uint32_t>(tree_.files.size() - 1);
    out_.extents.resize(open_extents_);
    while (!tree_.passed.empty() && tree_.passed.back().file == file) {
      count_passed_over(tree_.passed.back(), out_.passed_over);  // as for a kept file
      tree_.passed.pop_back();
    }
    if (names_) {
      tree_.file_name_ends.pop_back();
      tree_.file_names.resize(tree_.file_name_ends.empty() ? 0 : tree_.file_name_ends.back());
    }
    tree_.files.pop_back();
  }

 private:
  // What the current inode is, as its INODE_ITEM (first in key order) says.
  enum class Kind { kOther, kDir, kFile };

  std::optional<btrfs::Error> add_inode(const btrfs::TreeItem& it) {
    auto inode = btrfs::decode_inode_item(it.data);
    if (!inode) return btrfs::Error{inode.error().code, where_ + ": " + inode.error().context};
    if ((inode->mode & 0170000) == 0040000) {
      kind_ = Kind::kDir;
      tree_.dirs.push_back({it.objectid, 0, static_cast<uint32_t>(tree_.dir_names.size())});
    } else if ((inode->mode & 0170000) == 0100000) {
      kind_ = Kind::kFile;
      if (max_files_ && out_.files.size() + tree_.files.size() >= max_files_)
        return btrfs::Error{EFBIG, where_ + ": more than " + std::to_string(max_files_) +
                                       " files to hold at once"};
      open_extents_ = out_.extents.size();
      tree_.files.push_back({it.objectid, 0, inode->size, inode->flags, inode->mtime.sec,
                             inode->mtime.nsec});
      if (names_) tree_.file_name_ends.push_back(static_cast<uint32_t>(tree_.file_names.size()));
    }  // symlinks, fifos, devices: nothing kept
    return std::nullopt;
  }

  void first_name(const btrfs::Result<std::vector<btrfs::InodeName>>& refs) {
    if (named_ || !refs || refs->empty()) return;
    named_ = true;
    const btrfs::InodeName& ref = (*refs)[0];
    if (kind_ == Kind::kDir) {
      tree_.dirs.back().parent = ref.parent;
      if (names_) tree_.dirs.back().name_end = add_name(tree_.dir_names, ref.name);
    } else {
      tree_.files.back().parent = ref.parent;
      if (names_) tree_.file_name_ends.back() = add_name(tree_.file_names, ref.name);
    }
  }

  std::optional<btrfs::Error> add_extent(const btrfs::TreeItem& it) {
    if (kind_ != Kind::kFile) return std::nullopt;
    auto fe = btrfs::decode_file_extent_item(it.data);
    if (!fe) return btrfs::Error{fe.error().code, where_ + ": " + fe.error().context};
    const auto file = static_cast<uint32_t>(tree_.files.size() - 1);
    if (fe->type == btrfs::FileExtentType::Regular && fe->disk_bytenr != 0)
      out_.extents.push_back({file, fe->compression, false, it.offset, fe->length(),
                              fe->disk_bytenr, fe->disk_num_bytes, fe->offset});
    else
      tree_.passed.push_back({file, fe->type, fe->length(), fe->disk_bytenr});
    return std::nullopt;
  }

  ScanResult& out_;
  const bool names_;
  const uint64_t max_files_;
  const DropFile& drop_;
  const std::string where_;
  SubvolumeTree tree_;
  Kind kind_ = Kind::kOther;
  uint64_t current_ = 0;
  bool named_ = false;  // the current inode's first name is taken
  size_t open_extents_;  // where the last file's extents start in out_.extents
};

}  // namespace

void count_passed_over(const PassedOverPiece& piece, PassedOver& p) {
  if (piece.type == btrfs::FileExtentType::Inline) {
    ++p.inline_extents;
    p.inline_bytes += piece.length;
  } else if (piece.type == btrfs::FileExtentType::Prealloc) {
    ++p.prealloc_extents;
    p.prealloc_bytes += piece.length;
    p.prealloc_bytenrs.push_back(piece.disk_bytenr);
  } else {
    ++p.hole_extents;
    p.hole_bytes += piece.length;
  }
}

btrfs::Result<SubvolumeTree> read_subvolume_tree(btrfs::TreeSource& trees, uint64_t subvol,
                                                 ScanResult& out,
                                                 bool names, unsigned warmup_threads,
                                                 uint64_t max_files, const DropFile& drop) {
  btrfs::SearchKey key;
  key.tree_id = subvol;
  key.min_objectid = BTRFS_FIRST_FREE_OBJECTID;
  key.max_objectid = BTRFS_LAST_FREE_OBJECTID;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  const auto cursor = trees.search(key, 1 << 20);
  btrfs::ItemCursor& search = *cursor;
  const WarmupRange ahead =
      subvolume_inodes_range(subvol, BTRFS_FIRST_FREE_OBJECTID, BTRFS_LAST_FREE_OBJECTID);
  // Stopped and joined on every return below, before `trees` can go.
  TreeWarmup warmup(trees, ahead, warmup_threads, /*with_leader=*/true);
  uint64_t leader_at = 0;
  SubvolumeTreeReader reader(subvol, out, names, max_files, drop);
  for (;;) {
    auto next = search.next();
    if (!next) return btrfs::Error{next.error().code, reader.where() + ": " + next.error().context};
    if (!*next) break;
    const btrfs::TreeItem& it = **next;
    if (it.objectid != leader_at) warmup.leader_at(leader_at = it.objectid);
    ++out.tree_items;
    if (auto failed = reader.add(it)) return std::move(*failed);
  }
  reader.finish_file();
  out.search_calls += search.ioctl_calls();
  return reader.take();
}

}  // namespace btrdedupe
