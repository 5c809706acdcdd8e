// Which data extents are still allocated: the extent tree's EXTENT_ITEMs (CAP_SYS_ADMIN).
// Space is freed only when an extent loses its last reference anywhere, so this, read
// after the transaction of a dedupe committed, is what `btrfs filesystem df` shows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

// For each start address in `bytenrs` (sorted ascending, no duplicates), whether the extent
// tree holds a data extent item there that was allocated in transaction `born_by` or
// before: an item at the same address from a later transaction is a new extent in the
// space the old one freed (a rewrite can allocate there once the dedupe committed). One
// streaming tree search over each run of addresses no more than 64 MiB apart (an address
// far from the others: a single-item search). fd: any fd on the filesystem.
Result<std::vector<bool>> extents_allocated(int fd, std::span<const uint64_t> bytenrs,
                                            uint64_t born_by = UINT64_MAX);

// The disk size (disk_num_bytes: the compressed size of a compressed extent) of the data
// extent starting at `bytenr`, from its EXTENT_ITEM key; ENOENT when there is none.
Result<uint64_t> data_extent_disk_bytes(int fd, uint64_t bytenr);

}  // namespace btrfs
