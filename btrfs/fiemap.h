// FS_IOC_FIEMAP: a file's extent map as the VFS reports it.
#pragma once

#include <cstdint>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

struct FiemapExtent {
  uint64_t logical = 0;   // file offset
  uint64_t physical = 0;  // btrfs logical disk address (0 for inline)
  uint64_t length = 0;
  uint32_t flags = 0;     // FIEMAP_EXTENT_*

  bool last() const;
  bool shared() const;      // FIEMAP_EXTENT_SHARED: another reference exists (full backref walk)
  bool inline_data() const; // FIEMAP_EXTENT_DATA_INLINE
  bool unwritten() const;   // FIEMAP_EXTENT_UNWRITTEN: prealloc
  bool encoded() const;     // FIEMAP_EXTENT_ENCODED: compressed
  bool unmapped() const;    // FIEMAP_EXTENT_UNKNOWN or DELALLOC: no disk address yet
};

// Every extent overlapping [start, start+length), fetched in as many calls as needed.
// sync: FIEMAP_FLAG_SYNC, flushing dirty data first so delalloc ranges are mapped.
Result<std::vector<FiemapExtent>> fiemap(int fd, uint64_t start = 0,
                                         uint64_t length = ~0ULL, bool sync = true);

}  // namespace btrfs
