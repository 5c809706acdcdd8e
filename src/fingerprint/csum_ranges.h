// Sums from the checksum tree for ranges of disk addresses, one tree search per cluster of
// nearby ranges. The plain extents' fingerprints come from here (their sums are the sums
// of their data), and so do the keys of compressed extents (the sums of their compressed
// bytes, src/fingerprint/compressed_twins.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "btrfs/fs_info.h"
#include "btrfs/result.h"
#include "btrfs/tree_source.h"

namespace btrdedupe {

struct DiskRange {
  uint64_t start = 0;    // disk address (bytenr)
  uint64_t sectors = 0;  // its length in sectors
};

// Calls take(range, sector, sums, count) for every run of sectors of `ranges` the csum
// tree holds sums for (sums: count * fs.csum_size bytes, from `sector` of the range on),
// in disk order. `ranges` are sorted by start. Ranges
// closer than 8 MiB share one search over the gap. Adds its ioctl calls to *searches.
// Fails when the tree cannot be read; a malformed item only costs its sums.
btrfs::Result<void> for_each_csum(
    btrfs::TreeSource& csums, const btrfs::FsInfo& fs, std::span<const DiskRange> ranges,
    const std::function<void(size_t range, uint64_t sector, const uint8_t* sums, uint64_t count)>&
        take,
    uint64_t* searches);

}  // namespace btrdedupe
