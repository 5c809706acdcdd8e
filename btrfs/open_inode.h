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
// subvolume's root directory. Paths come from INO_PATHS; each candidate is opened with
// O_NOFOLLOW and accepted only when fstat shows the same device as the subvolume root and
// the wanted inode number, and the subvolume id of the opened file matches. A file renamed,
// replaced or deleted since the scan fails with ENOENT or ESTALE rather than opening
// another file. *path_out, when given, gets the path used (relative to the subvolume).
Result<Fd> open_inode(int subvol_root_fd, const InodeId& id, int flags,
                      std::string* path_out = nullptr);

}  // namespace btrfs
