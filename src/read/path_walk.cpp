#include "src/read/path_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/fiemap.h"
#include "btrfs/fs_info.h"
#include "btrfs/items.h"
#include "btrfs/subvolume.h"
#include "src/read/walk_kernel.h"
#include "src/scope/scan_admission.h"

namespace btrdedupe {
namespace {

// XFS has one tree: its files are named as if in btrfs's top-level subvolume.
constexpr uint64_t kOneTree = 5;
constexpr unsigned kStatxWanted = STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID |
                                  STATX_INO | STATX_SIZE | STATX_MTIME;

btrfs::Result<struct statx> statx_at(int dir, const char* name, int flags) {
  struct statx st {};
  if (::statx(dir, name, flags | AT_SYMLINK_NOFOLLOW, kStatxWanted, &st) != 0)
    return btrfs::errno_error(std::string("statx ") + name);
  return st;
}

// Opens for reading; without touching atime where the caller owns the file or is root (the
// kernel refuses O_NOATIME otherwise, so it is not asked for there).
btrfs::Result<btrfs::Fd> open_to_read(int dir, const char* name, bool may_noatime) {
  const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
  if (may_noatime)
    if (auto fd = btrfs::Fd::open_at(dir, name, flags | O_NOATIME); fd || fd.error().code != EPERM)
      return fd;
  return btrfs::Fd::open_at(dir, name, flags);
}

// A directory being walked: where it is, and the names below it to visit.
struct Directory {
  btrfs::Fd fd;
  uint32_t node = PathTable::kRoot;
  std::string relative;  // to the root, for ScanOptions::exclude
  uint64_t inode = 0;
  uint64_t subvolume = kOneTree;
  uint64_t dev = 0;
};

class PathWalk {
 public:
  PathWalk(const std::string& root, const ScanOptions& options, ScanResult& out,
           btrfs::FsKind kind, const WalkKernel& kernel)
      : root_(root), o_(options), out_(out), kind_(kind), kernel_(kernel), euid_(::geteuid()) {}

  btrfs::Result<void> walk_file(int fd, const struct statx& st) {
    return add_file(AT_FDCWD, root_.c_str(), st, nullptr, register_subvolume(fd));
  }

  btrfs::Result<void> walk_tree(btrfs::Fd fd, const struct statx& st) {
    Directory top{std::move(fd), PathTable::kRoot, "", st.stx_ino, 0, dev_of(st)};
    top.subvolume = register_subvolume(top.fd.get());
    return walk(top);
  }

 private:
  static uint64_t dev_of(const struct statx& st) {
    return (uint64_t{st.stx_dev_major} << 32) | st.stx_dev_minor;
  }

  // The subvolume `fd` lies in, registered with its read-only flag the first time.
  uint64_t register_subvolume(int fd) {
    uint64_t id = kOneTree;
    bool read_only = false;
    if (kind_ == btrfs::FsKind::Btrfs) {
      if (auto got = kernel_.subvolume_id(fd)) id = *got;
      if (auto ro = kernel_.subvolume_read_only(fd)) read_only = *ro;
    }
    if (known_subvolumes_.insert(id).second) {
      btrfs::Subvolume s;
      s.id = id;
      s.readonly = read_only;
      out_.subvolumes.push_back(s);
    }
    return id;
  }

  btrfs::Result<void> walk(Directory& d) {
    std::vector<std::pair<std::string, uint64_t>> below;  // directories: name, dev
    if (auto listed = list(d, below); !listed) return listed;
    for (const auto& [name, dev] : below) {
      auto child = enter(d, name, dev);
      if (!child) {
        ++out_.passed_over.unreadable;
        continue;
      }
      if (*child)
        if (auto ok = walk(**child); !ok) return ok;
    }
    return {};
  }

  // The directory's files added, its subdirectories listed for walk().
  btrfs::Result<void> list(Directory& d, std::vector<std::pair<std::string, uint64_t>>& below) {
    const int copy = ::dup(d.fd.get());
    if (copy < 0) return btrfs::errno_error("dup");
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(copy), ::closedir);
    if (!dir) {
      ::close(copy);
      if (d.relative.empty()) return btrfs::errno_error("opendir " + root_);
      ++out_.passed_over.unreadable;  // a directory below the root: the rest goes on
      return {};
    }
    while (const dirent* e = ::readdir(dir.get())) {
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (e->d_type != DT_REG && e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
      auto st = statx_at(d.fd.get(), e->d_name, 0);
      if (!st) continue;  // gone since the listing
      if (S_ISDIR(st->stx_mode)) {
        below.emplace_back(e->d_name, dev_of(*st));
      } else if (S_ISREG(st->stx_mode)) {
        if (auto ok = add_file(d.fd.get(), e->d_name, *st, &d, d.subvolume); !ok) return ok;
      }
    }
    return {};
  }

  // The subdirectory `name` of `d` to walk, or nullopt: another filesystem, a nested
  // subvolume not asked for, or one excluded.
  btrfs::Result<std::optional<Directory>> enter(const Directory& d, const std::string& name,
                                                uint64_t dev) {
    auto fd = btrfs::Fd::open_at(d.fd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!fd) return fd.error();
    auto st = statx_at(fd->get(), "", AT_EMPTY_PATH);
    if (!st) return st.error();
    Directory child{std::move(*fd), d.node, join_relative(d.relative, name), st->stx_ino,
                    d.subvolume, dev};
    if (dev != d.dev) {
      if (!same_filesystem(child.fd.get()) || !o_.recursive) return std::optional<Directory>{};
      const uint64_t id = register_subvolume(child.fd.get());
      if (!admits_subvolume(o_, id, out_.roots.front(), child.relative)) {
        count_left_out(Admission::Excluded, out_);
        return std::optional<Directory>{};
      }
      child.subvolume = id;
    }
    if (o_.keep_paths) child.node = out_.paths.add(d.node, name);
    return std::optional<Directory>{std::move(child)};
  }

  bool same_filesystem(int fd) const {
    auto kind = kernel_.filesystem_kind(fd, nullptr);
    if (!kind || *kind != kind_) return false;
    auto info = kernel_.walked_fs_info(fd, *kind);
    return info && info->fsid == out_.fs.fsid;
  }

  // A regular file `name` in `dir` (`in`: the directory walked; nullptr for a root that is
  // the file), unless the admission rule leaves it out, it is a hard link already taken,
  // or it cannot be read.
  btrfs::Result<void> add_file(int dir, const char* name, const struct statx& st,
                               const Directory* in, uint64_t subvolume) {
    const Admission admitted = admit_file(o_, out_.roots.front(), st.stx_size, [&](std::string& rel) {
      rel = in ? join_relative(in->relative, name) : "";
      return true;
    });
    if (admitted != Admission::Taken) {
      count_left_out(admitted, out_);
      return {};
    }
    if (st.stx_nlink > 1 && !linked_.emplace(subvolume, st.stx_ino).second) return {};
    const bool owned = euid_ == 0 || st.stx_uid == euid_;
    auto fd = open_to_read(dir, name, owned);
    if (!fd) {
      ++out_.passed_over.unreadable;
      return {};
    }
    auto map = kernel_.fiemap(fd->get());
    if (!map) {
      ++out_.passed_over.unreadable;
      return {};
    }
    if (o_.max_files && out_.files.size() >= o_.max_files)
      return btrfs::Error{EFBIG, "more than " + std::to_string(o_.max_files) + " files"};
    ScannedFile f;
    f.subvolume = subvolume;
    f.inode = st.stx_ino;
    f.size = st.stx_size;
    f.inode_flags = btrfs::kInodeNoDataSum;  // no checksum tree read: the data is
    f.parent = in ? in->inode : 0;
    f.set_mtime({st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec});
    if (in && o_.keep_paths) f.path_node = out_.paths.add(in->node, name);
    f.not_ours = !owned && ::faccessat(dir, name, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0;
    out_.passed_over.not_ours_files += f.not_ours;
    const auto index = static_cast<uint32_t>(out_.files.size());
    add_extents(*map, index, f);
    out_.files.push_back(f);
    return {};
  }

  void add_extents(const std::vector<btrfs::FiemapExtent>& map, uint32_t file, ScannedFile& f) {
    PassedOver& passed = out_.passed_over;
    for (const auto& e : map) {
      if (e.inline_data()) {
        f.inline_data = true;
        ++passed.inline_extents;
        passed.inline_bytes += e.length;
      } else if (e.unwritten()) {
        ++passed.prealloc_extents;
        passed.prealloc_bytes += e.length;
        passed.prealloc_bytenrs.push_back(e.physical);
      } else if (!e.unmapped() && e.physical != 0) {
        FileExtent x;
        x.file = file;
        x.file_offset = e.logical;
        x.length = e.length;
        x.disk_bytenr = e.physical;
        x.disk_num_bytes = e.length;
        // A compressed extent's address is where the whole extent starts: the file offset
        // tells apart the parts that files map (two files agree only from the same place).
        if (e.encoded()) x.extent_offset = e.logical;
        x.refs_unknown = e.shared() || e.encoded();
        out_.extents.push_back(x);
      }
    }
  }

  const std::string root_;
  const ScanOptions& o_;
  ScanResult& out_;
  const btrfs::FsKind kind_;
  const WalkKernel& kernel_;
  const uid_t euid_;
  std::set<uint64_t> known_subvolumes_;
  std::set<std::pair<uint64_t, uint64_t>> linked_;
};

}  // namespace

btrfs::Result<ScanResult> walk_root(const std::string& root, const ScanOptions& options,
                                    const WalkKernel& kernel) {
  auto fd = btrfs::Fd::open(root, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  std::string name;
  auto kind = kernel.filesystem_kind(fd->get(), &name);
  if (!kind) return btrfs::errno_error("statfs " + root);
  if (*kind == btrfs::FsKind::Other)
    return btrfs::Error{0, root + " is on " + name + ": btrdedupe reads btrfs and XFS"};
  ScanResult out;
  auto fs = kernel.walked_fs_info(fd->get(), *kind);
  if (!fs) return fs.error();
  out.fs = *fs;
  auto st = statx_at(fd->get(), "", AT_EMPTY_PATH);
  if (!st) return st.error();
  out.roots.push_back({root, S_ISREG(st->stx_mode)});
  PathWalk walk(root, options, out, *kind, kernel);
  auto ok = S_ISREG(st->stx_mode) ? walk.walk_file(fd->get(), *st)
                                  : walk.walk_tree(std::move(*fd), *st);
  if (!ok) return ok.error();
  sort_by_physical_identity(out.extents);
  return out;
}

btrfs::Result<ScanResult> walk_root(const std::string& root, const ScanOptions& options) {
  return walk_root(root, options, machine_walk_kernel());
}

}  // namespace btrdedupe
