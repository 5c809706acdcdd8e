// The one kind of file btrdedupe creates: an unnamed one (O_TMPFILE), never linked into
// the tree, so a crash or SIGKILL leaves nothing behind (the kernel drops it on the last
// close; after a crash, btrfs's orphan cleanup at the next mount). Plus the per-file
// settings a copy must share with the file it stands in for: FS_IOC_GETFLAGS/SETFLAGS
// (FS_NOCOW_FL, FS_COMPR_FL, FS_NOCOMP_FL) and the btrfs.compression property.
#pragma once

#include <optional>
#include <string>

#include "btrfs/fd.h"
#include "btrfs/result.h"

namespace btrfs {

// An unnamed regular file (mode 0600, read-write) on the filesystem of directory `dir_fd`.
// Errors as open(2) with O_TMPFILE gives them: EOPNOTSUPP (not supported there), EROFS,
// ENOSPC, EDQUOT, EACCES, ENOTDIR.
Result<Fd> open_unnamed_file(int dir_fd);

// FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (the chattr flags). FS_NOCOW_FL takes effect on btrfs
// only while the file is empty.
Result<unsigned> inode_attributes(int fd);
Result<void> set_inode_attributes(int fd, unsigned flags);

// The btrfs.compression property ("zlib", "lzo", "zstd", with a level, "no", ...):
// nullopt when the file has none (it then follows the mount options). The kernel sets it
// itself when FS_COMPR_FL is set through set_inode_attributes.
Result<std::optional<std::string>> compression_property(int fd);
// Sets it, or removes it (nullopt; removing one that is not there is not an error).
Result<void> set_compression_property(int fd, const std::optional<std::string>& value);

}  // namespace btrfs
