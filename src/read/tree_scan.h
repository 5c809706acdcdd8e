// The extent-aware scan: files and their extents come from tree search of each subvolume
// (INODE_ITEM, INODE_REF, EXTENT_DATA), never from readdir/stat, so paths are known
// without walking the directory tree and no file data is read.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "btrfs/fs_info.h"
#include "btrfs/result.h"
#include "btrfs/subvolume.h"
#include "src/match/batch_roles.h"
#include "src/read/file_extent.h"
#include "src/read/path_table.h"
#include "src/scope/subvolume_sets.h"

namespace btrdedupe {

struct ScanOptions {
  bool recursive = true;       // include nested subvolumes below the root
  uint64_t min_file_size = 0;  // smaller files are passed over
  // Fold files of read-only snapshots into an identical file already scanned, so memory
  // grows with distinct data, not with the number of snapshots. Off when read-only
  // snapshots may be dedupe destinations.
  bool fold_readonly_aliases = true;
  // Keep each file's path (ScanResult::paths). A scan that only counts (the confirmation
  // after dedupe) turns this off.
  bool keep_paths = true;
  // Leaves paths out: called with the root as given and a file's or nested subvolume's path
  // relative to it; true excludes the file, or the subvolume and everything below it.
  std::function<bool(const std::string& root, const std::string& relative)> exclude;
  // Subvolumes (by id) not read at all, nor the subvolumes nested below them
  // (--exclude-subvol); counted in ScanResult::excluded.
  std::set<uint64_t> excluded_subvolumes;
  // Cold-cache read-ahead (src/read/tree_warmup.h): threads that read later parts of each
  // subvolume tree while the scan walks it. 0 turns all warm-up off. Results never
  // depend on it; only the time of a cold scan does. 6 (cold -r, linux-source copies on a
  // direct-I/O loop device, 3 runs each): scan 0.76 -> 0.59 s at 2 copies and 1.51 -> 1.25 s
  // at 4 against 3 threads; 12 gained no more wall time.
  unsigned warmup_threads = 6;
  // Also read the csum tree in the background during the scan (min(2, warmup_threads)
  // threads), so fingerprint()'s csum walk that follows finds it cached. Off for scans
  // no fingerprint follows (the confirmation after dedupe, listings).
  bool warm_csum_tree = true;
  // More regular files than this (0: no limit) ends the scan with EFBIG: the caller then
  // reads the tree in windows instead of whole (CatalogSession::windowed_scan), so that
  // memory stays bounded however large the tree.
  uint64_t max_files = 0;
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
  PathTable paths;                  // ScannedFile::path_node indexes this
  std::vector<FileExtent> extents;  // regular extents of files, sorted by physical identity
  PassedOver passed_over;
  uint64_t tree_items = 0;          // items the kernel returned
  uint64_t search_calls = 0;        // TREE_SEARCH_V2 ioctls made
  uint64_t excluded = 0;            // files and subvolumes left out by ScanOptions::exclude
  // Files in scope with no regular extent (inline, holes or prealloc only) that a windowed
  // read counted and did not keep; a whole scan keeps them in `files` instead.
  uint64_t files_without_extents = 0;
  // For each kept file, the read-only subvolumes whose folded files it stands for (see
  // ScannedFile::readonly_alias): their references count for per-subvolume figures.
  FileSubvolumeSets readonly_alias_subvolumes;
};

// Scans the directory tree under `root` (a directory, or one regular file).
// Errors: `root` missing or not on btrfs, no privilege for tree search (needs root).
btrfs::Result<ScanResult> scan_tree(const std::string& root, const ScanOptions& options);

// A whole subvolume to scan, reached at `path`: the directory that is its root (an empty
// path when no mount shows it: its tree can still be read, its files not opened).
struct SubvolumeRoot {
  uint64_t id = 0;
  std::string path;
};
// Scans exactly `subvolumes`, in the order given, as one scan (nested subvolumes only when
// listed too; ScanOptions::recursive is not used): each is a ScanRoot, and a read-only
// snapshot's file folds into an identical file of any subvolume listed before it.
// `fs_path` is any path on the filesystem (for tree search).
btrfs::Result<ScanResult> scan_subvolumes(const std::string& fs_path,
                                          const std::vector<SubvolumeRoot>& subvolumes,
                                          const ScanOptions& options);

// Combines scans of several roots on ONE filesystem into one, so duplicates are found
// across them. A file reached through two roots (nested or repeated paths) is kept once.
// Fails with EXDEV when the scans are of different filesystems.
btrfs::Result<ScanResult> merge_scans(std::vector<ScanResult> scans);

// Sorts extents the way ScanResult::extents is: by (disk_bytenr, extent_offset, file).
void sort_by_physical_identity(std::vector<FileExtent>& extents);

// Bytes of the scanned extents by physical sharing.
struct SharingSummary {
  uint64_t logical_bytes = 0;     // sum of all regular extents' lengths
  uint64_t unique_bytes = 0;      // bytes of distinct physical data they reference
  uint64_t shared_bytes = 0;      // logical_bytes - unique_bytes: already shared
  uint64_t physical_extents = 0;  // distinct disk_bytenr values
  // duperemove's measure: bytes of file extents whose physical extent has another
  // reference (FIEMAP's SHARED flag), summed over every file, so a deduped pair counts
  // twice. Only differences of it mean anything across windows (see summarize_sharing).
  uint64_t in_shared_extents = 0;
  // Disk space the distinct physical extents take (disk_num_bytes: compressed size for
  // compressed extents), whole extents however little of them is referenced.
  uint64_t allocated_bytes = 0;
};
// extents must be sorted by (disk_bytenr, extent_offset), as ScanResult's are.
// files (by file index, optional): a file that stands for folded read-only snapshot copies
// (ScannedFile::readonly_alias) holds extents those copies share.
// roles (by file index; empty: all the batch's own): files an earlier summary counted
// (BatchRoles::counted_before, a window's twins from earlier windows) add no extents, and
// data they share is not unique here; in_shared_extents counts them all the same, so that
// after minus before of one window is what that window's dedupe newly shared, the twins'
// side included. Files another window counts (BatchRoles::left_out) are as if not here.
SharingSummary summarize_sharing(const std::vector<FileExtent>& extents,
                                 const std::vector<ScannedFile>* files = nullptr,
                                 const BatchRoles& roles = {});

}  // namespace btrdedupe
