// From physical extents back to files: LOGICAL_INO_V2 and INO_PATHS (both CAP_SYS_ADMIN).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

// One reference to a data extent.
struct ExtentRef {
  uint64_t inode = 0;
  // A file offset in `inode` (measured on 6.18):
  //  - without ignore_offset: the file offset holding the queried byte `logical`;
  //  - with ignore_offset: the file offset where this file's extent item begins, i.e. where
  //    the part of the extent that the file uses starts (which is not the extent's own start
  //    when the file references the extent from an inner offset, e.g. after a partial clone).
  uint64_t offset = 0;
  uint64_t root = 0;    // subvolume id
};

// Every (inode, offset, root) that references the extent containing disk address `logical`.
// Without ignore_offset only the references whose range covers that exact byte come back.
// ignore_offset: BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET, to get every reference of the
// extent; the UAPI asks for `logical` = the extent's start (6.18 also accepts an inner
// address; per the design notes kernels 6.2.0-6.2.15 and 6.3.0-6.3.2 ignore the flag).
// A snapshot's references come back with the snapshot's root. An address with no data
// extent fails with ENOENT.
// The result buffer grows (64 KiB up to the kernel's 16 MiB cap) until nothing is missing;
// beyond that the call returns what fit and sets *truncated when given.
Result<std::vector<ExtentRef>> logical_ino(int fd, uint64_t logical, bool ignore_offset,
                                           bool* truncated = nullptr);

// Paths of `inode` relative to the root of the subvolume that `subvol_fd` is in
// (INO_PATHS; one path per hardlink). The kernel caps the reply at 4 KiB whatever buffer it
// is given, so an inode with many (or long) hardlink names yields only the names that fit
// (about 20 names of 200 bytes): *truncated, when given, says whether some were left out.
// An inode that does not exist in that subvolume fails with ENOENT.
Result<std::vector<std::string>> inode_paths(int subvol_fd, uint64_t inode,
                                             bool* truncated = nullptr);

}  // namespace btrfs
