// The extent-aware scan: files and their extents come from tree search of each subvolume
// (INODE_ITEM, INODE_REF, EXTENT_DATA), never from readdir/stat, so paths are known
// without walking the directory tree and no file data is read.
#pragma once

#include <cstdint>
#include <functional>
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
  // Fold files of read-only snapshots into an identical file already scanned, so memory
  // grows with distinct data, not with the number of snapshots. Off when read-only
  // snapshots may be dedupe destinations.
  bool fold_readonly_aliases = true;
  // Leaves paths out: called with the root as given and a file's or nested subvolume's path
  // relative to it; true excludes the file, or the subvolume and everything below it.
  std::function<bool(const std::string& root, const std::string& relative)> exclude;
};

// A path the user asked to scan.
struct ScanRoot {
  std::string path;       // as given
  bool is_file = false;   // names one regular file, not a directory tree
};

struct ScanResult {
  std::vector<ScanRoot> roots;      // ScannedFile::root indexes this
  btrfs::FsInfo fs;
  std::vector<btrfs::Subvolume> subvolumes;  // the ones scanned
  std::vector<ScannedFile> files;
  std::vector<FileExtent> extents;  // regular extents of files, sorted by physical identity
  PassedOver passed_over;
  uint64_t tree_items = 0;          // items the kernel returned
  uint64_t search_calls = 0;        // TREE_SEARCH_V2 ioctls made
  uint64_t excluded = 0;            // files and subvolumes left out by ScanOptions::exclude
};

// Scans the directory tree under `root` (a directory, or one regular file).
// Errors: `root` missing or not on btrfs, no privilege for tree search (needs root).
btrfs::Result<ScanResult> scan_tree(const std::string& root, const ScanOptions& options);

// Combines scans of several roots on ONE filesystem into one, so duplicates are found
// across them. A file reached through two roots (nested or repeated paths) is kept once.
// Fails with EXDEV when the scans are of different filesystems.
btrfs::Result<ScanResult> merge_scans(std::vector<ScanResult> scans);

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
