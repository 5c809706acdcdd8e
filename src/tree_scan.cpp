#include "src/tree_scan.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <iterator>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "btrfs/fd.h"
#include "src/heap_release.h"
#include "btrfs/tree_search.h"
#include "src/tree_warmup.h"

namespace btrdedupe {
namespace {

// A directory of a subvolume: what membership, paths and the placement of nested
// subvolumes need. Only directories get one: the scan's largest structure while a
// subvolume is read was a 64-byte entry for every inode.
struct DirEntry {
  uint64_t ino = 0;
  uint64_t parent = 0;
  uint32_t name_end = 0;  // in SubvolumeTree::dir_names; the name starts where the previous ends
};

// A regular file as read, until membership (which needs the whole subvolume: a moved file's
// directory may come after it) says whether it becomes a ScannedFile. The INODE_ITEM
// fields a ScannedFile keeps and the parent, nothing more.
struct PendingFile {
  uint64_t ino = 0;
  uint64_t parent = 0;  // of the first name
  uint64_t size = 0, flags = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  btrfs::Timespec mtime() const { return {mtime_sec, mtime_nsec}; }
};

// An inline, hole or prealloc extent: only counted, once its file is known to be kept.
struct PassedOverPiece {
  uint32_t file = 0;  // index into SubvolumeTree::files
  btrfs::FileExtentType type = btrfs::FileExtentType::Regular;  // Regular: a hole
  uint64_t length = 0;
};

// One subvolume's directories and regular files straight from its tree, each in key
// order (tree search returns items sorted). Its regular extents go to ScanResult::extents
// as they are read, FileExtent::file holding the file's index here until the kept files
// are known (scan_queue): no second copy of the extents is held. Deques: they grow
// without the copy (and twice the memory for a moment) of a doubling vector.
struct SubvolumeTree {
  std::deque<DirEntry> dirs;
  std::string dir_names;
  std::deque<PendingFile> files;
  // Files' names, only when paths or exclusion need them.
  std::string file_names;
  std::deque<uint32_t> file_name_ends;
  std::vector<PassedOverPiece> passed;
  static_assert(sizeof(DirEntry) == 24 && sizeof(PendingFile) == 48);

  std::string_view dir_name(size_t i) const {
    const uint64_t begin = i == 0 ? 0 : dirs[i - 1].name_end;
    return std::string_view(dir_names).substr(begin, dirs[i].name_end - begin);
  }
  std::string_view file_name(size_t i) const {
    if (file_name_ends.empty()) return {};
    const uint64_t begin = i == 0 ? 0 : file_name_ends[i - 1];
    return std::string_view(file_names).substr(begin, file_name_ends[i] - begin);
  }
  // Index of directory `ino`'s entry, or npos.
  size_t find_dir(uint64_t ino) const {
    auto it = std::lower_bound(dirs.begin(), dirs.end(), ino,
                               [](const DirEntry& e, uint64_t i) { return e.ino < i; });
    return it == dirs.end() || it->ino != ino ? std::string::npos
                                              : static_cast<size_t>(it - dirs.begin());
  }
};

// A chunk of a subvolume tree for a warm-up thread spans at least this many inode
// numbers (a few leaves' worth); smaller trees get fewer chunks, tiny ones none.
constexpr uint64_t kWarmupMinInodes = 256;
// The same for the csum tree, in bytes of disk address: a 16 KiB leaf of crc32c sums
// covers 16 MiB of data.
constexpr uint64_t kWarmupMinCsumBytes = 64ULL << 20;

// The csum tree, warmed in the background while the scan runs (ScanOptions::warm_csum_tree).
std::unique_ptr<TreeWarmup> warm_csum_tree(int fd, const ScanOptions& options) {
  const unsigned threads = std::min(2u, options.warmup_threads);
  if (!options.warm_csum_tree || threads == 0) return nullptr;
  WarmupRange csums;
  csums.tree_id = BTRFS_CSUM_TREE_OBJECTID;
  csums.axis = WarmupRange::Axis::Offset;
  csums.objectid = BTRFS_EXTENT_CSUM_OBJECTID;
  csums.type = BTRFS_EXTENT_CSUM_KEY;
  csums.first = 0;
  csums.last = btrfs::kMaxU64;
  csums.min_chunk = kWarmupMinCsumBytes;
  return std::make_unique<TreeWarmup>(fd, csums, threads, /*with_leader=*/false);
}

void count_passed_over(const PassedOverPiece& piece, PassedOver& p) {
  if (piece.type == btrfs::FileExtentType::Inline) {
    ++p.inline_extents;
    p.inline_bytes += piece.length;
  } else if (piece.type == btrfs::FileExtentType::Prealloc) {
    ++p.prealloc_extents;
    p.prealloc_bytes += piece.length;
  } else {
    ++p.hole_extents;
    p.hole_bytes += piece.length;
  }
}

// Called once all of a regular file's items are read, with its regular extents; true drops
// the file there and then (a read-only snapshot's copy of a file already scanned), so its
// pending entry and extents never pile up beside the rest of the scan.
using DropFile =
    std::function<bool(const PendingFile&, const FileExtent* first, const FileExtent* end)>;

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
      out_.extents.push_back({file, fe->compression, it.offset, fe->length(),
                              fe->disk_bytenr, fe->disk_num_bytes, fe->offset});
    else
      tree_.passed.push_back({file, fe->type, fe->length()});
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

// names: keep each inode's name (for paths); without, only the parent links membership needs.
// warmup_threads: threads reading the tree ahead of this walk (src/tree_warmup.h).
// max_files: with the files already in `out`, more than this many is EFBIG (0: no limit).
btrfs::Result<SubvolumeTree> read_subvolume_tree(int fd, uint64_t subvol, ScanResult& out,
                                                 bool names, unsigned warmup_threads,
                                                 uint64_t max_files, const DropFile& drop = {}) {
  btrfs::SearchKey key;
  key.tree_id = subvol;
  key.min_objectid = BTRFS_FIRST_FREE_OBJECTID;
  key.max_objectid = BTRFS_LAST_FREE_OBJECTID;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  btrfs::TreeSearch search(fd, key, 1 << 20);
  WarmupRange ahead;
  ahead.tree_id = subvol;
  ahead.first = BTRFS_FIRST_FREE_OBJECTID;
  ahead.last = BTRFS_LAST_FREE_OBJECTID;
  ahead.min_chunk = kWarmupMinInodes;
  // Stopped and joined on every return below, before `fd` can go.
  TreeWarmup warmup(fd, ahead, warmup_threads, /*with_leader=*/true);
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

// Path of directory `ino` relative to `top` (a directory inode), or false when not below it.
bool path_below(const SubvolumeTree& tree, uint64_t ino, uint64_t top, std::string* path) {
  std::vector<std::string_view> parts;
  for (int depth = 0; ino != top; ++depth) {
    const size_t i = tree.find_dir(ino);
    if (i == std::string::npos || tree.dirs[i].parent == 0 || tree.dirs[i].parent == ino ||
        depth > 4096)
      return false;
    parts.push_back(tree.dir_name(i));
    ino = tree.dirs[i].parent;
  }
  path->clear();
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
    if (!path->empty()) *path += '/';
    *path += *p;
  }
  return true;
}

// Path of file `i` (an index into tree.files) relative to `top`, or false when not below it.
bool file_path_below(const SubvolumeTree& tree, size_t i, uint64_t top, std::string* path) {
  if (tree.files[i].parent == 0 || !path_below(tree, tree.files[i].parent, top, path))
    return false;
  if (!path->empty()) *path += '/';
  *path += tree.file_name(i);
  return true;
}

// Which directories lie below the scan's top directory, remembered along each walk up so a
// directory is walked once, however many files it holds.
class Membership {
 public:
  Membership(const SubvolumeTree& tree, uint64_t top)
      : tree_(tree), top_(top), state_(tree.dirs.size(), kUnknown) {}

  // Whether directory `ino` is the top or below it.
  bool below(uint64_t ino) {
    std::vector<size_t> chain;
    uint8_t result = kOutside;
    for (size_t i = tree_.find_dir(ino); i != std::string::npos;) {
      if (tree_.dirs[i].ino == top_) {
        result = kInside;
        break;
      }
      if (state_[i] != kUnknown) {
        result = state_[i];
        break;
      }
      chain.push_back(i);
      const DirEntry& e = tree_.dirs[i];
      if (e.parent == 0 || e.parent == e.ino || chain.size() > 4096) break;
      i = tree_.find_dir(e.parent);
    }
    for (size_t i : chain) state_[i] = result;
    return result == kInside;
  }

 private:
  static constexpr uint8_t kUnknown = 0, kInside = 1, kOutside = 2;
  const SubvolumeTree& tree_;
  uint64_t top_;
  std::vector<uint8_t> state_;
};

// Adds the names of kept files to a PathTable, each directory once.
class PathBuilder {
 public:
  PathBuilder(const SubvolumeTree& tree, uint64_t top, uint32_t top_node, PathTable& table)
      : tree_(tree), top_(top), top_node_(top_node), table_(table),
        node_(tree.dirs.size(), kUnset) {}

  // The node of tree file `i` (named by tree.file_name(i)) in directory `parent`, which
  // Membership found below the top.
  uint32_t file_node(size_t i, uint64_t parent) {
    return table_.add(dir_node(parent), tree_.file_name(i));
  }

 private:
  uint32_t dir_node(uint64_t ino) {
    std::vector<size_t> chain;
    uint32_t base = top_node_;
    for (size_t i = tree_.find_dir(ino); i != std::string::npos && tree_.dirs[i].ino != top_;
         i = tree_.find_dir(tree_.dirs[i].parent)) {
      if (node_[i] != kUnset) {
        base = node_[i];
        break;
      }
      chain.push_back(i);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      base = node_[*it] = table_.add(base, tree_.dir_name(*it));
    return base;
  }

  static constexpr uint32_t kUnset = PathTable::kRoot - 1;
  const SubvolumeTree& tree_;
  uint64_t top_;
  uint32_t top_node_;
  PathTable& table_;
  std::vector<uint32_t> node_;
};

// Files by the exact layout of their data, to fold read-only snapshot copies.
class LayoutIndex {
 public:
  // Registers files [first_file, end) and their extents [first_extent, end), which the
  // scan just appended, each file's extents together and in file order. With `fold`, a
  // file whose layout is already known is removed and its twin marked; a read-only file
  // without any extent is dropped too (nothing to do).
  void add(ScanResult& out, size_t first_file, size_t first_extent, bool fold) {
    const size_t nfiles = out.files.size() - first_file;
    std::vector<size_t> begin(nfiles + 1, out.extents.size());  // file i: [begin[i], begin[i+1])
    for (size_t e = out.extents.size(); e-- > first_extent;)
      begin[out.extents[e].file - first_file] = e;
    for (size_t i = nfiles; i-- > 0;) begin[i] = std::min(begin[i], begin[i + 1]);
    std::vector<int64_t> remap(nfiles);
    size_t kept = 0;
    for (size_t i = 0; i < nfiles; ++i) {
      ScannedFile& f = out.files[first_file + i];
      const bool no_extents = begin[i] == begin[i + 1];
      const Key key = layout_key(f.size, f.inode_flags, out.extents.data() + begin[i],
                                 out.extents.data() + begin[i + 1]);
      auto it = known_.find(key);
      if (fold && (no_extents || it != known_.end())) {
        if (it != known_.end()) {
          out.files[it->second].readonly_alias = true;
          out.readonly_alias_subvolumes.add(it->second, f.subvolume);
        }
        ++out.passed_over.readonly_aliases;
        remap[i] = -1;
        continue;
      }
      remap[i] = static_cast<int64_t>(first_file + kept);
      if (!no_extents) known_.emplace(key, static_cast<uint32_t>(first_file + kept));
      if (kept != i) out.files[first_file + kept] = std::move(f);
      ++kept;
    }
    if (kept == nfiles) return;
    out.files.resize(first_file + kept);
    size_t w = first_extent;
    for (size_t e = first_extent; e < out.extents.size(); ++e) {
      const int64_t to = remap[out.extents[e].file - first_file];
      if (to < 0) continue;
      out.extents[w] = out.extents[e];
      out.extents[w].file = static_cast<uint32_t>(to);
      ++w;
    }
    out.extents.resize(w);
  }

  // The file already registered with this layout (by an earlier add), if any.
  std::optional<uint32_t> find(uint64_t size, uint64_t inode_flags, const FileExtent* first,
                               const FileExtent* end) const {
    auto it = known_.find(layout_key(size, inode_flags, first, end));
    if (it == known_.end()) return std::nullopt;
    return it->second;
  }

 private:
  struct Key {
    uint64_t lo, hi;
    bool operator==(const Key& o) const { return lo == o.lo && hi == o.hi; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k.lo); }
  };

  static Key layout_key(uint64_t size, uint64_t inode_flags, const FileExtent* first,
                        const FileExtent* end) {
    std::vector<uint64_t> words{size, inode_flags & btrfs::kInodeNoDataSum};
    for (const FileExtent* e = first; e != end; ++e) {
      words.push_back(e->file_offset);
      words.push_back(e->length);
      words.push_back(e->disk_bytenr);
      words.push_back(e->extent_offset);
    }
    const XXH128_hash_t h = XXH3_128bits(words.data(), words.size() * sizeof(uint64_t));
    return {h.low64, h.high64};
  }

  std::unordered_map<Key, uint32_t, KeyHash> known_;
};

}  // namespace

namespace {

struct Work {
  uint64_t subvol, top_inode;
  std::string prefix;  // of the subvolume below the root, for ScanOptions::exclude
  uint32_t prefix_node = PathTable::kRoot;  // the same in ScanResult::paths
  uint32_t root = 0;   // index into ScanResult::roots
};

// Reads the queued subvolumes into `out`, and with options.recursive those nested below
// them (for a directory root). `file_inode`: the inode when the root is one regular file.
btrfs::Result<void> scan_queue(int fd, std::deque<Work> queue,
                               const std::vector<btrfs::Subvolume>& all, uint64_t file_inode,
                               const ScanOptions& options, ScanResult& out);

}  // namespace

btrfs::Result<ScanResult> scan_tree(const std::string& root, const ScanOptions& options) {
  auto fd = btrfs::Fd::open(root, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), root); !ok) return ok.error();
  // Data written but not yet flushed (delalloc) has no extent item yet: the scan would see
  // such a file without data and pass it over. Flush the filesystem first.
  ::syncfs(fd->get());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return btrfs::errno_error("stat " + root);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    return btrfs::Error{EINVAL, root + " is neither a directory nor a regular file"};
  // Declared after fd: stopped and joined before it closes, on every return.
  const auto csum_warmup = warm_csum_tree(fd->get(), options);

  ScanResult out;
  out.roots.push_back({root, S_ISREG(st.st_mode)});
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  out.fs = *info;
  auto subvol = btrfs::subvolume_id(fd->get());
  if (!subvol) return subvol.error();
  auto all = btrfs::list_subvolumes(root);
  if (!all) return all.error();
  if (options.excluded_subvolumes.count(*subvol)) {  // --exclude-subvol: nothing read
    ++out.excluded;
    return out;
  }
  std::deque<Work> queue{{*subvol, st.st_ino, "", PathTable::kRoot, 0}};
  if (auto ok = scan_queue(fd->get(), std::move(queue), *all, st.st_ino, options, out); !ok)
    return ok.error();
  return out;
}

btrfs::Result<ScanResult> scan_subvolumes(const std::string& fs_path,
                                          const std::vector<SubvolumeRoot>& subvolumes,
                                          const ScanOptions& options) {
  auto fd = btrfs::Fd::open(fs_path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), fs_path); !ok) return ok.error();
  const auto csum_warmup = warm_csum_tree(fd->get(), options);
  ScanResult out;
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  out.fs = *info;
  auto all = btrfs::list_subvolumes(fs_path);
  if (!all) return all.error();
  std::deque<Work> queue;
  for (const auto& sv : subvolumes) {
    queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, "", PathTable::kRoot,
                     static_cast<uint32_t>(out.roots.size())});
    out.roots.push_back({sv.path, false});
  }
  ScanOptions flat = options;
  flat.recursive = false;
  if (auto ok = scan_queue(fd->get(), std::move(queue), *all, 0, flat, out); !ok) return ok.error();
  return out;
}

namespace {

// Whether the scan may reach a read-only subvolume: a queued one, or with recursion one
// nested (at any depth) below a queued one. A superset is fine: it only costs memory.
bool may_read_readonly(const std::deque<Work>& queue, const std::vector<btrfs::Subvolume>& all,
                       bool recursive) {
  std::unordered_map<uint64_t, uint64_t> parent_of;
  for (const auto& s : all) parent_of[s.id] = s.parent_id;
  std::set<uint64_t> queued;
  for (const auto& w : queue) queued.insert(w.subvol);
  for (const auto& s : all) {
    if (!s.readonly) continue;
    uint64_t id = s.id;
    for (size_t depth = 0; id != 0 && depth <= all.size(); ++depth) {
      if (queued.count(id)) return true;
      if (!recursive) break;
      auto up = parent_of.find(id);
      id = up == parent_of.end() ? 0 : up->second;
    }
  }
  return false;
}

// scan_queue's walk: what lasts from one queued subvolume to the next.
class QueueScan {
 public:
  QueueScan(int fd, std::deque<Work> queue, const std::vector<btrfs::Subvolume>& all,
            uint64_t file_inode, const ScanOptions& options, ScanResult& out)
      : fd_(fd), queue_(std::move(queue)), all_(all), file_inode_(file_inode),
        options_(options), out_(out),
        // The layout index costs a hash entry per file (5 MB for 100k files): only worth it
        // when the scan may reach a read-only subvolume to fold, not for any on the
        // filesystem.
        may_fold_(options.fold_readonly_aliases &&
                  may_read_readonly(queue_, all, options.recursive)),
        table_(options.keep_paths ? out.paths : scratch_) {}

  btrfs::Result<void> run() {
    while (!queue_.empty()) {
      const Work work = queue_.front();
      queue_.pop_front();
      if (auto ok = read_subvolume(work); !ok) return ok;
    }
    sort_by_physical_identity(out_.extents);
    out_.files.shrink_to_fit();  // vectors grew by doubling: give the slack back
    out_.extents.shrink_to_fit();
    out_.paths.shrink_to_fit();
    return {};
  }

 private:
  static constexpr uint32_t kDropped = UINT32_MAX;

  btrfs::Result<void> read_subvolume(const Work& work) {
    const bool root_is_file = out_.roots[work.root].is_file;
    const size_t first_file = out_.files.size(), first_extent = out_.extents.size();
    const bool readonly = std::any_of(all_.begin(), all_.end(), [&](const btrfs::Subvolume& s) {
      return s.id == work.subvol && s.readonly;
    });
    // A read-only subvolume read whole drops its copies of files already scanned as they
    // are read: k snapshots then cost no more memory than one. (Excludes and a root inside
    // the subvolume need every file's path first: those fold after the read, below.)
    DropFile drop;
    if (may_fold_ && readonly && !root_is_file && !options_.exclude &&
        work.top_inode == BTRFS_FIRST_FREE_OBJECTID)
      drop = drop_known_layouts(work.subvol);
    auto tree = read_subvolume_tree(fd_, work.subvol, out_,
                                    options_.keep_paths || options_.exclude,
                                    options_.warmup_threads, options_.max_files, drop);
    if (!tree) return tree.error();
    queue_nested(work, *tree);
    keep_files(work, *tree, first_extent);
    if (may_fold_) layouts_.add(out_, first_file, first_extent, readonly);
    name_files(work, *tree, first_file);
    return {};
  }

  // For a read-only subvolume's file with the layout of a file already scanned.
  DropFile drop_known_layouts(uint64_t subvol) {
    return [this, subvol](const PendingFile& e, const FileExtent* first, const FileExtent* end) {
      // Unnamed (an orphan) is not below the root; too small is counted as such below.
      if (e.parent == 0 || e.size < options_.min_file_size) return false;
      std::optional<uint32_t> twin;
      if (first != end) {
        twin = layouts_.find(e.size, e.flags, first, end);
        if (!twin) return false;
        out_.files[*twin].readonly_alias = true;
        out_.readonly_alias_subvolumes.add(*twin, subvol);
      }
      ++out_.passed_over.readonly_aliases;  // a file with no extent: nothing to keep
      return true;
    };
  }

  // Records the subvolume and, with options.recursive, queues those nested below the root.
  void queue_nested(const Work& work, const SubvolumeTree& tree) {
    const std::string& root = out_.roots[work.root].path;
    const bool root_is_file = out_.roots[work.root].is_file;
    for (const auto& sv : all_) {
      if (sv.id == work.subvol) out_.subvolumes.push_back(sv);
      if (!options_.recursive || sv.parent_id != work.subvol || root_is_file) continue;
      std::string dir;
      if (!path_below(tree, sv.dir_id, work.top_inode, &dir)) continue;
      const std::string below = join_relative(dir, basename_of(sv.path));
      std::string rel = join_relative(work.prefix, below);
      if (options_.excluded_subvolumes.count(sv.id) ||
          (options_.exclude && options_.exclude(root, rel))) {
        ++out_.excluded;
        continue;
      }
      const uint32_t node = table_.add(work.prefix_node, below);
      queue_.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, std::move(rel), node, work.root});
    }
  }

  // Moves the kept files of `tree`, in inode order, and their extents into out_.
  void keep_files(const Work& work, SubvolumeTree& tree, size_t first_extent) {
    // FileExtent::file maps tree files to the kept ones below.
    std::vector<uint32_t> file_of(tree.files.size(), kDropped);
    const size_t kept = select_files(work, tree, file_of);
    move_files(work, tree, file_of, kept);
    size_t w = first_extent;
    for (size_t e = first_extent; e < out_.extents.size(); ++e) {
      const uint32_t file = file_of[out_.extents[e].file];
      if (file == kDropped) continue;
      out_.extents[w] = out_.extents[e];
      out_.extents[w++].file = file;
    }
    out_.extents.resize(w);
    for (const auto& piece : tree.passed) {
      if (file_of[piece.file] == kDropped) continue;
      count_passed_over(piece, out_.passed_over);
      if (piece.type == btrfs::FileExtentType::Inline)
        out_.files[file_of[piece.file]].inline_data = true;
    }
    free_storage(file_of);
  }

  // Marks the files that stay (0 in `file_of`) and returns how many.
  size_t select_files(const Work& work, const SubvolumeTree& tree,
                      std::vector<uint32_t>& file_of) {
    const std::string& root = out_.roots[work.root].path;
    const bool root_is_file = out_.roots[work.root].is_file;
    Membership membership(tree, work.top_inode);
    std::string rel;
    size_t kept = 0;
    for (size_t i = 0; i < tree.files.size(); ++i) {
      const PendingFile& file = tree.files[i];
      if (root_is_file) {
        if (file.ino != file_inode_) continue;
      } else if (file.parent == 0 || !membership.below(file.parent)) {
        continue;
      }
      if (options_.exclude && !root_is_file &&
          (!file_path_below(tree, i, work.top_inode, &rel) ||
           options_.exclude(root, join_relative(work.prefix, rel)))) {
        ++out_.excluded;
        continue;
      }
      if (file.size < options_.min_file_size) {
        ++out_.passed_over.excluded_files;
        continue;
      }
      file_of[i] = 0;
      ++kept;
    }
    return kept;
  }

  // The marked files become ScannedFiles; `file_of` then holds their index in out_.files.
  void move_files(const Work& work, SubvolumeTree& tree, std::vector<uint32_t>& file_of,
                  size_t kept) {
    // Exactly the room needed: files are the largest vector the scan result holds. Pending
    // files are freed as they move over, so their room is free again for the path table.
    out_.files.reserve(out_.files.size() + kept);
    for (size_t i = 0; !tree.files.empty(); ++i) {
      const PendingFile pending = tree.files.front();
      tree.files.pop_front();
      if (file_of[i] == kDropped) continue;
      file_of[i] = static_cast<uint32_t>(out_.files.size());
      // path_node holds the tree's file index until the names of the files that stay are added.
      ScannedFile f;
      f.subvolume = work.subvol;
      f.inode = pending.ino;
      f.size = pending.size;
      f.inode_flags = pending.flags;
      f.parent = pending.parent;
      f.set_mtime(pending.mtime());
      f.root = work.root;
      f.path_node = static_cast<uint32_t>(i);
      out_.files.push_back(f);
    }
    free_storage(tree.files);
  }

  // Names only for the files that stayed: a folded snapshot's files leave none behind.
  // Without keep_paths none at all: a table built to be dropped cost ~4 MB at the peak of
  // a run that dedupes (its confirmation scan).
  void name_files(const Work& work, const SubvolumeTree& tree, size_t first_file) {
    if (!options_.keep_paths || out_.roots[work.root].is_file) {
      for (size_t f = first_file; f < out_.files.size(); ++f)
        out_.files[f].path_node = PathTable::kRoot;
      return;
    }
    PathBuilder names(tree, work.top_inode, work.prefix_node, table_);
    for (size_t f = first_file; f < out_.files.size(); ++f) {
      ScannedFile& file = out_.files[f];
      file.path_node = names.file_node(file.path_node, file.parent);
    }
  }

  const int fd_;
  std::deque<Work> queue_;
  const std::vector<btrfs::Subvolume>& all_;
  const uint64_t file_inode_;
  const ScanOptions& options_;
  ScanResult& out_;
  const bool may_fold_;
  LayoutIndex layouts_;
  // Without keep_paths only nested subvolumes' nodes go here (files get none), then dropped.
  PathTable scratch_;
  PathTable& table_;
};

btrfs::Result<void> scan_queue(int fd, std::deque<Work> queue,
                               const std::vector<btrfs::Subvolume>& all, uint64_t file_inode,
                               const ScanOptions& options, ScanResult& out) {
  QueueScan scan(fd, std::move(queue), all, file_inode, options, out);
  return scan.run();
}

}  // namespace

btrfs::Result<ScanResult> merge_scans(std::vector<ScanResult> scans) {
  if (scans.empty()) return ScanResult{};
  ScanResult out = std::move(scans[0]);
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> seen;  // (subvolume, inode) -> file
  for (uint32_t i = 0; i < out.files.size(); ++i)
    seen.emplace(std::make_pair(out.files[i].subvolume, out.files[i].inode), i);
  for (size_t s = 1; s < scans.size(); ++s) {
    ScanResult& in = scans[s];
    if (in.fs.fsid != out.fs.fsid)
      return btrfs::Error{EXDEV, in.roots[0].path + " is on another filesystem than " +
                                     out.roots[0].path + ": run them separately"};
    const auto root_base = static_cast<uint32_t>(out.roots.size());
    const uint32_t node_base = out.paths.append(in.paths);
    out.roots.insert(out.roots.end(), in.roots.begin(), in.roots.end());
    std::vector<int64_t> remap(in.files.size(), -1);
    for (size_t i = 0; i < in.files.size(); ++i) {
      const auto [at, added] =
          seen.emplace(std::make_pair(in.files[i].subvolume, in.files[i].inode),
                       static_cast<uint32_t>(out.files.size()));
      // The read-only subvolumes it stands for, whichever root reached it.
      const auto& aliases = in.readonly_alias_subvolumes;
      out.readonly_alias_subvolumes.add_all(at->second, aliases, aliases.set_of(static_cast<uint32_t>(i)));
      if (!added) {
        out.files[at->second].readonly_alias |= in.files[i].readonly_alias;
        continue;
      }
      remap[i] = static_cast<int64_t>(out.files.size());
      in.files[i].root += root_base;
      if (in.files[i].path_node != PathTable::kRoot) in.files[i].path_node += node_base;
      out.files.push_back(std::move(in.files[i]));
    }
    for (auto e : in.extents) {
      if (remap[e.file] < 0) continue;
      e.file = static_cast<uint32_t>(remap[e.file]);
      out.extents.push_back(e);
    }
    for (const auto& sv : in.subvolumes)
      if (std::none_of(out.subvolumes.begin(), out.subvolumes.end(),
                       [&](const auto& o) { return o.id == sv.id; }))
        out.subvolumes.push_back(sv);
    out.passed_over.add(in.passed_over);
    out.tree_items += in.tree_items;
    out.search_calls += in.search_calls;
    out.excluded += in.excluded;
  }
  sort_by_physical_identity(out.extents);
  return out;
}

void sort_by_physical_identity(std::vector<FileExtent>& extents) {
  std::sort(extents.begin(), extents.end(), [](const FileExtent& a, const FileExtent& b) {
    return std::tie(a.disk_bytenr, a.extent_offset, a.file) <
           std::tie(b.disk_bytenr, b.extent_offset, b.file);
  });
}

SharingSummary summarize_sharing(const std::vector<FileExtent>& extents,
                                 const std::vector<bool>* counted_before,
                                 const std::vector<ScannedFile>* files,
                                 const std::vector<bool>* left_out) {
  if (left_out) {
    std::vector<FileExtent> kept;
    std::copy_if(extents.begin(), extents.end(), std::back_inserter(kept),
                 [&](const FileExtent& e) { return !(*left_out)[e.file]; });
    return summarize_sharing(kept, counted_before, files);
  }
  SharingSummary s;
  auto before = [&](const FileExtent& e) { return counted_before && (*counted_before)[e.file]; };
  auto aliased = [&](const FileExtent& e) { return files && (*files)[e.file].readonly_alias; };
  size_t i = 0;
  while (i < extents.size()) {
    const uint64_t bytenr = extents[i].disk_bytenr;
    size_t end_of_group = i;
    bool elsewhere = false, held_by_snapshots = false;
    uint64_t group_bytes = 0;
    for (; end_of_group < extents.size() && extents[end_of_group].disk_bytenr == bytenr;
         ++end_of_group) {
      elsewhere = elsewhere || before(extents[end_of_group]);
      held_by_snapshots = held_by_snapshots || aliased(extents[end_of_group]);
      group_bytes += extents[end_of_group].length;
    }
    if (end_of_group - i > 1 || held_by_snapshots) s.in_shared_extents += group_bytes;
    if (!elsewhere) {
      ++s.physical_extents;
      s.allocated_bytes += extents[i].disk_num_bytes;
    }
    uint64_t covered_end = 0;
    for (; i < end_of_group; ++i) {
      if (before(extents[i])) continue;
      const uint64_t start = extents[i].extent_offset, end = start + extents[i].length;
      s.logical_bytes += extents[i].length;
      if (!elsewhere && end > covered_end) {
        s.unique_bytes += end - std::max(start, covered_end);
        covered_end = end;
      }
    }
  }
  s.shared_bytes = s.logical_bytes - s.unique_bytes;
  return s;
}

}  // namespace btrdedupe
