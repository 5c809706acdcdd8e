// The tree scan's walk over a queue of subvolumes (internal to the scan). Apart from the
// scan's entry points, which each fill the queue their own way, and from the read of one
// tree, which knows nothing of roots, options or the files kept so far.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "btrfs/result.h"
#include "btrfs/subvolume.h"
#include "btrfs/tree_source.h"
#include "src/read/path_table.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct Work {
  uint64_t subvol, top_inode;
  std::string prefix;  // of the subvolume below the root, for ScanOptions::exclude
  uint32_t prefix_node = PathTable::kRoot;  // the same in ScanResult::paths
  uint32_t root = 0;   // index into ScanResult::roots
};

// Reads the queued subvolumes into `out`, and with options.recursive those nested below
// them (for a directory root). `file_inode`: the inode when the root is one regular file.
// `trees`: where the subvolume trees are read (the kernel's, or in tests an in-memory one).
btrfs::Result<void> scan_queue(btrfs::TreeSource& trees, std::deque<Work> queue,
                               const std::vector<btrfs::Subvolume>& all, uint64_t file_inode,
                               const ScanOptions& options, ScanResult& out);

}  // namespace btrdedupe
