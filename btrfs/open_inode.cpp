#include "btrfs/open_inode.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "btrfs/backrefs.h"
#include "btrfs/subvolume.h"

namespace btrfs {
namespace {

// Inode number of every subvolume's root directory (BTRFS_FIRST_FREE_OBJECTID).
constexpr uint64_t kSubvolumeRootInode = 256;

std::string describe(const InodeId& id) {
  return "inode " + std::to_string(id.inode) + " of subvolume " + std::to_string(id.subvolume);
}

bool same_file(const struct stat& st, const struct stat& root, const InodeId& id) {
  return st.st_dev == root.st_dev && st.st_ino == id.inode;
}

// What trying one path gave: the verified fd, a mismatch (another file is there now),
// a vanished path, or a hard error.
enum class Attempt { Opened, Stale, Gone, Failed };

Attempt try_path(int root_fd, const struct stat& root, const InodeId& id,
                 const std::string& path, int flags, Fd* out, Error* error) {
  // Checked before opening so that a file now at this path is not even opened (a FIFO
  // would block, a device could react); checked again after, against the race.
  struct stat st {};
  if (::fstatat(root_fd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Attempt::Gone;
    *error = errno_error("stat " + path + " for " + describe(id));
    return Attempt::Failed;
  }
  if (!same_file(st, root, id)) return Attempt::Stale;

  const int fd = ::openat(root_fd, path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Attempt::Gone;
    if (errno == ELOOP) return Attempt::Stale;  // a symlink replaced the file
    *error = errno_error("open " + path + " for " + describe(id));
    return Attempt::Failed;
  }
  Fd opened(fd);
  if (::fstat(opened.get(), &st) != 0) {
    *error = errno_error("fstat " + path + " for " + describe(id));
    return Attempt::Failed;
  }
  if (!same_file(st, root, id)) return Attempt::Stale;
  // st_dev already ties it to the subvolume; the id proves it is the one asked for.
  auto subvol = subvolume_id(opened.get());
  if (!subvol) {
    *error = Error{subvol.error().code, subvol.error().context + " of " + path};
    return Attempt::Failed;
  }
  if (*subvol != id.subvolume) return Attempt::Stale;
  *out = std::move(opened);
  return Attempt::Opened;
}

Result<void> check_root(int subvol_root_fd, const InodeId& id, struct stat* root) {
  if (::fstat(subvol_root_fd, root) != 0)
    return errno_error("fstat of the subvolume root given for " + describe(id));
  if (root->st_ino != kSubvolumeRootInode || !S_ISDIR(root->st_mode))
    return Error{EINVAL, "the fd given for " + describe(id) + " is not a subvolume root"};
  auto subvol = subvolume_id(subvol_root_fd);
  if (!subvol) return subvol.error();
  if (*subvol != id.subvolume)
    return Error{ESTALE, "the fd given for " + describe(id) + " is the root of subvolume " +
                             std::to_string(*subvol)};
  return {};
}

}  // namespace

Result<Fd> open_inode(int subvol_root_fd, const InodeId& id, int flags, std::string* path_out) {
  struct stat root {};
  if (auto checked = check_root(subvol_root_fd, id, &root); !checked) return checked.error();
  auto paths = inode_paths(subvol_root_fd, id.inode);
  if (!paths) {
    if (paths.error().code == ENOENT) return Error{ENOENT, describe(id) + " no longer exists"};
    return paths.error();
  }
  bool stale = false;
  for (const auto& path : *paths) {
    Fd fd;
    Error error;
    switch (try_path(subvol_root_fd, root, id, path, flags, &fd, &error)) {
      case Attempt::Opened:
        if (path_out) *path_out = path;
        return fd;
      case Attempt::Stale:
        stale = true;
        break;
      case Attempt::Gone:
        break;
      case Attempt::Failed:
        return error;
    }
  }
  if (stale) return Error{ESTALE, describe(id) + ": its paths now name other files"};
  return Error{ENOENT, describe(id) + " has no path that opens it"};
}

}  // namespace btrfs
