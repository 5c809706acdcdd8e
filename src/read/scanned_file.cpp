#include "src/read/scanned_file.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace btrdedupe {
namespace {

// open(2) fails with ENAMETOOLONG on a path of PATH_MAX bytes or more, which a deep tree
// reaches (the scan learns paths from the tree's refs, not from a path walk). Such a path is
// opened one directory at a time with openat(), following no symlink on the way.
btrfs::Result<btrfs::Fd> open_path(const std::string& p, int flags) {
  auto fd = btrfs::Fd::open(p, flags);
  if (fd || fd.error().code != ENAMETOOLONG) return fd;
  btrfs::Fd dir;
  size_t at = 0;
  if (!p.empty() && p[0] == '/') {
    auto root = btrfs::Fd::open("/", O_RDONLY | O_DIRECTORY);
    if (!root) return root.error();
    dir = std::move(*root);
    at = 1;
  }
  for (;;) {
    const size_t slash = p.find('/', at);
    const std::string name = p.substr(at, slash == std::string::npos ? slash : slash - at);
    const int base = dir.valid() ? dir.get() : AT_FDCWD;
    if (slash == std::string::npos) {
      const int f = ::openat(base, name.c_str(), flags | O_CLOEXEC);
      if (f < 0) return btrfs::errno_error("open " + p);
      return btrfs::Fd(f);
    }
    at = slash + 1;
    if (name.empty()) continue;
    const int d = ::openat(base, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0) return btrfs::errno_error("open " + p);
    dir = btrfs::Fd(d);
  }
}

}  // namespace

std::string relative_path(const ScanResult& scan, const ScannedFile& file) {
  return file.path_node == PathTable::kRoot ? std::string() : scan.paths.path(file.path_node);
}

std::string file_path(const ScanResult& scan, const ScannedFile& file) {
  const ScanRoot& root = scan.roots.at(file.root);
  const std::string rel = root.is_file ? std::string() : relative_path(scan, file);
  return rel.empty() ? root.path : root.path + "/" + rel;
}

bool readonly_subvolume(const ScanResult& scan, uint64_t id) {
  for (const auto& s : scan.subvolumes)
    if (s.id == id) return s.readonly;
  return false;
}

bool writable(const ScanResult& scan, const ScannedFile& file) {
  return !file.readonly_alias && !file.source_only() && !readonly_subvolume(scan, file.subvolume);
}

btrfs::Result<btrfs::Fd> open_scanned_file(const ScanResult& scan, const ScannedFile& file,
                                           bool unchanged) {
  const std::string p = file_path(scan, file);
  auto fd = open_path(p, O_RDONLY | O_NOFOLLOW | O_NOATIME);
  if (!fd && fd.error().code == EPERM) fd = open_path(p, O_RDONLY | O_NOFOLLOW);
  if (!fd) return fd.error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return btrfs::errno_error("stat " + p);
  if (st.st_ino != file.inode || !S_ISREG(st.st_mode))
    return btrfs::Error{ESTALE, p + ": replaced by another file since the scan"};
  if (unchanged && changed_since_scan(fd->get(), file))
    return btrfs::Error{ESTALE, p + ": changed since the scan"};
  return fd;
}

bool changed_since_scan(int fd, const ScannedFile& file) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return true;
  return static_cast<uint64_t>(st.st_size) != file.size || st.st_mtim.tv_sec != file.mtime_sec ||
         static_cast<uint32_t>(st.st_mtim.tv_nsec) != file.mtime_nsec;
}

}  // namespace btrdedupe
