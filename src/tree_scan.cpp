#include "src/tree_scan.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "btrfs/fd.h"
#include "btrfs/tree_search.h"

namespace btrdedupe {
namespace {

// What the scan keeps of an INODE_ITEM: held for every inode of a subvolume while its tree
// is read, so only the fields used later.
struct InodeFacts {
  uint64_t size = 0, transid = 0, flags = 0;
  btrfs::Timespec mtime;
  uint32_t nlink = 0, mode = 0;
  bool is_regular() const { return (mode & 0170000) == 0100000; }
};

struct InodeEntry {
  uint64_t parent = 0;
  std::string name;
  InodeFacts item;
  bool has_item = false;
};

// What the scan keeps of an EXTENT_DATA item until its file is known to be wanted.
struct PendingExtent {
  uint64_t inode = 0, file_offset = 0;
  uint64_t disk_bytenr = 0, disk_num_bytes = 0, extent_offset = 0, length = 0, generation = 0;
  btrfs::FileExtentType type = btrfs::FileExtentType::Regular;
  btrfs::Compression compression = btrfs::Compression::None;
};

// One subvolume's inodes and extents, straight from its tree.
struct SubvolumeTree {
  std::unordered_map<uint64_t, InodeEntry> inodes;
  std::vector<PendingExtent> extents;
};

// names: keep each inode's name (for paths); without, only the parent links membership needs.
btrfs::Result<SubvolumeTree> read_subvolume_tree(int fd, uint64_t subvol, ScanResult& out,
                                                 bool names) {
  btrfs::SearchKey key;
  key.tree_id = subvol;
  key.min_objectid = BTRFS_FIRST_FREE_OBJECTID;
  key.max_objectid = BTRFS_LAST_FREE_OBJECTID;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  btrfs::TreeSearch search(fd, key, 1 << 20);
  SubvolumeTree tree;
  const std::string where = "subvolume " + std::to_string(subvol);
  for (;;) {
    auto next = search.next();
    if (!next) return btrfs::Error{next.error().code, where + ": " + next.error().context};
    if (!*next) break;
    const btrfs::TreeItem& it = **next;
    ++out.tree_items;
    switch (it.type) {
      case BTRFS_INODE_ITEM_KEY: {
        auto inode = btrfs::decode_inode_item(it.data);
        if (!inode) return btrfs::Error{inode.error().code, where + ": " + inode.error().context};
        auto& e = tree.inodes[it.objectid];
        e.item = {inode->size, inode->transid, inode->flags, inode->mtime, inode->nlink,
                  inode->mode};
        e.has_item = true;
        break;
      }
      case BTRFS_INODE_REF_KEY: {
        auto& e = tree.inodes[it.objectid];
        if (e.parent != 0) break;  // the first name is enough for reports
        auto refs = btrfs::decode_inode_refs(it.offset, it.data);
        if (refs && !refs->empty()) {
          e.parent = (*refs)[0].parent;
          if (names) e.name = std::move((*refs)[0].name);
        }
        break;
      }
      case BTRFS_INODE_EXTREF_KEY: {
        auto& e = tree.inodes[it.objectid];
        if (e.parent != 0) break;
        auto refs = btrfs::decode_inode_extrefs(it.data);
        if (refs && !refs->empty()) {
          e.parent = (*refs)[0].parent;
          if (names) e.name = std::move((*refs)[0].name);
        }
        break;
      }
      case BTRFS_EXTENT_DATA_KEY: {
        auto fe = btrfs::decode_file_extent_item(it.data);
        if (!fe) return btrfs::Error{fe.error().code, where + ": " + fe.error().context};
        tree.extents.push_back({it.objectid, it.offset, fe->disk_bytenr, fe->disk_num_bytes,
                                fe->offset, fe->length(), fe->generation, fe->type,
                                fe->compression});
        break;
      }
      default:
        break;  // dir items, xattrs: inside the key box but not needed
    }
  }
  out.search_calls += search.ioctl_calls();
  return tree;
}

// Path of `ino` relative to `top` (a directory inode), or false when not below it.
// path may be null: membership only, no string built.
bool path_below(const SubvolumeTree& tree, uint64_t ino, uint64_t top, std::string* path) {
  std::vector<const std::string*> parts;
  for (int depth = 0; ino != top; ++depth) {
    auto it = tree.inodes.find(ino);
    if (it == tree.inodes.end() || it->second.parent == 0 || it->second.parent == ino ||
        depth > 4096)
      return false;
    parts.push_back(&it->second.name);
    ino = it->second.parent;
  }
  if (!path) return true;
  path->clear();
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
    if (!path->empty()) *path += '/';
    *path += **p;
  }
  return true;
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

std::string basename_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

void add_file_extents(const PendingExtent& pe, uint32_t file, ScanResult& out) {
  if (pe.type == btrfs::FileExtentType::Inline) {
    ++out.passed_over.inline_extents;
    out.passed_over.inline_bytes += pe.length;
  } else if (pe.type == btrfs::FileExtentType::Prealloc) {
    ++out.passed_over.prealloc_extents;
    out.passed_over.prealloc_bytes += pe.length;
  } else if (pe.disk_bytenr == 0) {
    ++out.passed_over.hole_extents;
    out.passed_over.hole_bytes += pe.length;
  } else {
    out.extents.push_back({file, pe.file_offset, pe.length, pe.disk_bytenr, pe.disk_num_bytes,
                           pe.extent_offset, pe.generation, pe.compression});
  }
}

// Files by the exact layout of their data, to fold read-only snapshot copies.
class LayoutIndex {
 public:
  // Registers files [first_file, end) and their extents [first_extent, end), which the
  // scan just appended. With `fold`, a file whose layout is already known is removed and
  // its twin marked; a read-only file without any extent is dropped too (nothing to do).
  void add(ScanResult& out, size_t first_file, size_t first_extent, bool fold) {
    const size_t nfiles = out.files.size() - first_file;
    std::vector<std::vector<const FileExtent*>> per_file(nfiles);
    for (size_t e = first_extent; e < out.extents.size(); ++e)
      per_file[out.extents[e].file - first_file].push_back(&out.extents[e]);
    std::vector<int64_t> remap(nfiles);
    size_t kept = 0;
    for (size_t i = 0; i < nfiles; ++i) {
      ScannedFile& f = out.files[first_file + i];
      const Key key = layout_key(f, per_file[i]);
      auto it = known_.find(key);
      if (fold && (per_file[i].empty() || it != known_.end())) {
        if (it != known_.end()) {
          out.files[it->second].readonly_alias = true;
          out.readonly_alias_subvolumes.add(it->second, f.subvolume);
        }
        ++out.passed_over.readonly_aliases;
        remap[i] = -1;
        continue;
      }
      remap[i] = static_cast<int64_t>(first_file + kept);
      if (!per_file[i].empty()) known_.emplace(key, static_cast<uint32_t>(first_file + kept));
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

 private:
  struct Key {
    uint64_t lo, hi;
    bool operator==(const Key& o) const { return lo == o.lo && hi == o.hi; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k.lo); }
  };

  static Key layout_key(const ScannedFile& f, const std::vector<const FileExtent*>& extents) {
    std::vector<uint64_t> words{f.size, f.inode_flags & btrfs::kInodeNoDataSum};
    for (const FileExtent* e : extents) {
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
  std::string prefix;
  uint32_t root = 0;  // index into ScanResult::roots
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
  std::deque<Work> queue{{*subvol, st.st_ino, "", 0}};
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
  ScanResult out;
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  out.fs = *info;
  auto all = btrfs::list_subvolumes(fs_path);
  if (!all) return all.error();
  std::deque<Work> queue;
  for (const auto& sv : subvolumes) {
    queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, "", static_cast<uint32_t>(out.roots.size())});
    out.roots.push_back({sv.path, false});
  }
  ScanOptions flat = options;
  flat.recursive = false;
  if (auto ok = scan_queue(fd->get(), std::move(queue), *all, 0, flat, out); !ok) return ok.error();
  return out;
}

namespace {

btrfs::Result<void> scan_queue(int fd, std::deque<Work> queue,
                               const std::vector<btrfs::Subvolume>& all, uint64_t file_inode,
                               const ScanOptions& options, ScanResult& out) {
  LayoutIndex layouts;
  while (!queue.empty()) {
    const Work work = queue.front();
    queue.pop_front();
    const std::string& root = out.roots[work.root].path;
    const bool root_is_file = out.roots[work.root].is_file;
    auto tree = read_subvolume_tree(fd, work.subvol, out, options.keep_paths || options.exclude);
    if (!tree) return tree.error();
    for (const auto& sv : all) {
      if (sv.id == work.subvol) out.subvolumes.push_back(sv);
      if (!options.recursive || sv.parent_id != work.subvol || root_is_file) continue;
      std::string dir;
      if (!path_below(*tree, sv.dir_id, work.top_inode, &dir)) continue;
      std::string rel = join(work.prefix, join(dir, basename_of(sv.path)));
      if (options.excluded_subvolumes.count(sv.id) || (options.exclude && options.exclude(root, rel))) {
        ++out.excluded;
        continue;
      }
      queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, std::move(rel), work.root});
    }

    const size_t first_file = out.files.size(), first_extent = out.extents.size();
    std::unordered_map<uint64_t, uint32_t> file_index;
    for (const auto& [ino, entry] : tree->inodes) {
      if (!entry.has_item || !entry.item.is_regular()) continue;
      std::string rel;
      if (root_is_file) {
        if (ino != file_inode) continue;
      } else if (!path_below(*tree, ino, work.top_inode,
                             options.keep_paths || options.exclude ? &rel : nullptr)) {
        continue;
      }
      if (options.exclude && !root_is_file && options.exclude(root, join(work.prefix, rel))) {
        ++out.excluded;
        continue;
      }
      if (entry.item.size < options.min_file_size) {
        ++out.passed_over.excluded_files;
        continue;
      }
      file_index[ino] = static_cast<uint32_t>(out.files.size());
      out.files.push_back({work.subvol, ino, entry.item.size, entry.item.transid, entry.item.flags,
                           entry.item.nlink, entry.item.mtime, false, work.root,
                           options.keep_paths ? join(work.prefix, rel) : std::string(),
                           entry.parent});
    }
    for (const auto& pe : tree->extents) {
      auto it = file_index.find(pe.inode);
      if (it != file_index.end()) add_file_extents(pe, it->second, out);
    }
    const bool readonly = std::any_of(all.begin(), all.end(), [&](const btrfs::Subvolume& s) {
      return s.id == work.subvol && s.readonly;
    });
    layouts.add(out, first_file, first_extent, readonly && options.fold_readonly_aliases);
  }
  std::sort(out.extents.begin(), out.extents.end(), [](const FileExtent& a, const FileExtent& b) {
    return std::tie(a.disk_bytenr, a.extent_offset, a.file) <
           std::tie(b.disk_bytenr, b.extent_offset, b.file);
  });
  out.files.shrink_to_fit();  // vectors grew by doubling: give the slack back
  out.extents.shrink_to_fit();
  return {};
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
    const auto& p = in.passed_over;
    auto& q = out.passed_over;
    q.inline_extents += p.inline_extents, q.inline_bytes += p.inline_bytes;
    q.hole_extents += p.hole_extents, q.hole_bytes += p.hole_bytes;
    q.prealloc_extents += p.prealloc_extents, q.prealloc_bytes += p.prealloc_bytes;
    q.excluded_files += p.excluded_files;
    q.readonly_aliases += p.readonly_aliases;
    out.tree_items += in.tree_items;
    out.search_calls += in.search_calls;
    out.excluded += in.excluded;
  }
  std::sort(out.extents.begin(), out.extents.end(), [](const FileExtent& a, const FileExtent& b) {
    return std::tie(a.disk_bytenr, a.extent_offset, a.file) <
           std::tie(b.disk_bytenr, b.extent_offset, b.file);
  });
  return out;
}

SharingSummary summarize_sharing(const std::vector<FileExtent>& extents) {
  SharingSummary s;
  size_t i = 0;
  while (i < extents.size()) {
    const uint64_t bytenr = extents[i].disk_bytenr;
    ++s.physical_extents;
    uint64_t covered_end = 0;
    for (; i < extents.size() && extents[i].disk_bytenr == bytenr; ++i) {
      const uint64_t start = extents[i].extent_offset, end = start + extents[i].length;
      s.logical_bytes += extents[i].length;
      if (end > covered_end) {
        s.unique_bytes += end - std::max(start, covered_end);
        covered_end = end;
      }
    }
  }
  s.shared_bytes = s.logical_bytes - s.unique_bytes;
  return s;
}

}  // namespace btrdedupe
