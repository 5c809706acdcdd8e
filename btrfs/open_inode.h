// Opening a file by (subvolume, inode) and proving it is that inode.
#pragma once

#include <cstdint>
#include <string>

#include "btrfs/fd.h"
#include "btrfs/result.h"

namespace btrfs {

struct InodeId {
  uint64_t subvolume = 0;
  uint64_t inode = 0;
};

// Opens `id.inode` of subvolume `id.subvolume`, given `subvol_root_fd`: an fd of that
// subvolume's root directory. Paths come from INO_PATHS (at most the names that fit in its
// 4 KiB reply); each candidate is checked with fstatat before it is opened, so a file now at
// that path is not even opened, then opened with O_NOFOLLOW (and O_CLOEXEC) and accepted
// only when fstat shows the same device as the subvolume root and the wanted inode number,
// and the subvolume id of the opened file matches. A file renamed, replaced or deleted since
// the scan fails with ENOENT (no path names it any more) or ESTALE (its paths now name other
// files) rather than opening another file. A subvol_root_fd that is not a subvolume root
// directory is EINVAL; the root of another subvolume than id.subvolume is ESTALE.
// Not detected: a deleted inode whose number was reused by a new file (btrfs can reuse the
// highest inode number after a remount); a generation check would need a file handle.
// *path_out, when given, gets the path used (relative to the subvolume).
Result<Fd> open_inode(int subvol_root_fd, const InodeId& id, int flags,
                      std::string* path_out = nullptr);

}  // namespace btrfs
