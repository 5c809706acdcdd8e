// Per-sector data checksums from the csum tree (tree 7), without reading file data.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "btrfs/fs_info.h"
#include "btrfs/result.h"

namespace btrfs {

// Sums of the sectors [disk_start, disk_start + sectors*sectorsize).
struct SectorSums {
  uint64_t disk_start = 0;
  uint32_t sectorsize = 0;
  uint16_t csum_size = 0;
  std::vector<uint8_t> sums;    // sectors() * csum_size bytes; zero where missing
  std::vector<bool> present;    // per sector: was a sum found in the tree

  size_t sectors() const { return present.size(); }
  std::span<const uint8_t> sum(size_t sector) const {
    return {sums.data() + sector * csum_size, csum_size};
  }
  size_t missing() const;       // sectors without a sum (nodatasum, prealloc, ...)
  bool complete() const { return missing() == 0; }
};

// Reads the sums covering [disk_bytenr, disk_bytenr + length) (sector aligned; length is
// rounded up to whole sectors). Items that start before the range or run past its end are
// clipped. `fd`: any fd on the filesystem; `info` gives sector, node and checksum size.
// An unaligned disk_bytenr, a range that wraps, or an FsInfo without sizes is EINVAL.
Result<SectorSums> read_sector_sums(int fd, const FsInfo& info, uint64_t disk_bytenr,
                                    uint64_t length);

}  // namespace btrfs
