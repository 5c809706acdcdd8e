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
  uint64_t offset = 0;  // file offset where the referenced extent's data would start
  uint64_t root = 0;    // subvolume id
};

// Every (inode, offset, root) that references the extent containing disk address `logical`.
// ignore_offset: BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET with `logical` = the extent's start,
// to get every reference of the extent, not only those covering that exact byte.
// The result buffer grows (up to 16 MiB) until nothing is missing; beyond that the call
// returns what fit and sets *truncated when given.
Result<std::vector<ExtentRef>> logical_ino(int fd, uint64_t logical, bool ignore_offset,
                                           bool* truncated = nullptr);

// Paths of `inode` relative to the root of the subvolume that `subvol_fd` is in
// (INO_PATHS; one path per hardlink).
Result<std::vector<std::string>> inode_paths(int subvol_fd, uint64_t inode);

}  // namespace btrfs
