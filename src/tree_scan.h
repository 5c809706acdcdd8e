// The extent-aware scan: files and their extents come from tree search of each subvolume
// (INODE_ITEM, INODE_REF, EXTENT_DATA), never from readdir/stat, so paths are known
// without walking the directory tree and no file data is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/fs_info.h"
#include "btrfs/result.h"
#include "btrfs/subvolume.h"
#include "src/file_extent.h"

namespace btrdedupe {

struct ScanOptions {
  bool recursive = true;       // include nested subvolumes below the root
  uint64_t min_file_size = 0;  // smaller files are passed over
};

struct ScanResult {
  std::string root;                 // the path scanned, as given
  bool root_is_file = false;        // root names one regular file
  btrfs::FsInfo fs;
  std::vector<btrfs::Subvolume> subvolumes;  // the ones scanned
  std::vector<ScannedFile> files;
  std::vector<FileExtent> extents;  // regular extents of files, sorted by physical identity
  PassedOver passed_over;
  uint64_t tree_items = 0;          // items the kernel returned
  uint64_t search_calls = 0;        // TREE_SEARCH_V2 ioctls made
};

// Scans the directory tree under `root` (a directory, or one regular file).
// Errors: `root` missing or not on btrfs, no privilege for tree search (needs root).
btrfs::Result<ScanResult> scan_tree(const std::string& root, const ScanOptions& options);

// Bytes of the scanned extents by physical sharing.
struct SharingSummary {
  uint64_t logical_bytes = 0;     // sum of all regular extents' lengths
  uint64_t unique_bytes = 0;      // bytes of distinct physical data they reference
  uint64_t shared_bytes = 0;      // logical_bytes - unique_bytes: already shared
  uint64_t physical_extents = 0;  // distinct disk_bytenr values
};
// extents must be sorted by (disk_bytenr, extent_offset), as ScanResult's are.
SharingSummary summarize_sharing(const std::vector<FileExtent>& extents);

}  // namespace btrdedupe
