// What a walk of the paths (src/read/path_walk.h) asks the kernel beyond listing and
// opening: which filesystem an fd is on and its identity, each file's extents as FIEMAP
// reports them, and the btrfs subvolume an fd lies in. Behind one interface so that unit
// tests walk a real temporary directory as if it were btrfs or XFS, with the extents and
// subvolumes they choose; the kernel's own answers are tested on real btrfs and XFS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/fiemap.h"
#include "btrfs/fs_info.h"
#include "btrfs/result.h"

namespace btrdedupe {

// Contract: calls come from the walking thread; answers depend only on the fd's file.
class WalkKernel {
 public:
  virtual ~WalkKernel();
  // statfs(2): which kind; `name` (may be nullptr) gets an Other one's name for a message.
  virtual btrfs::Result<btrfs::FsKind> filesystem_kind(int fd, std::string* name) const = 0;
  // The identity a walk knows the filesystem by (btrfs::read_walked_fs_info).
  virtual btrfs::Result<btrfs::FsInfo> walked_fs_info(int fd, btrfs::FsKind kind) const = 0;
  // The open regular file's whole extent map, as FS_IOC_FIEMAP gives it after a sync.
  virtual btrfs::Result<std::vector<btrfs::FiemapExtent>> fiemap(int fd) const = 0;
  // btrfs only (unprivileged ioctls): the id of the subvolume `fd` lies in, and whether
  // that subvolume is read-only.
  virtual btrfs::Result<uint64_t> subvolume_id(int fd) const = 0;
  virtual btrfs::Result<bool> subvolume_read_only(int fd) const = 0;
};

// The machine's own: statfs, FS_IOC_GETFSUUID or BTRFS_IOC_FS_INFO, FIEMAP, libbtrfsutil.
const WalkKernel& machine_walk_kernel();

}  // namespace btrdedupe
