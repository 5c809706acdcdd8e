// Plain data produced by the scan: files, the extents they map, and the physical
// extents those share. Every later stage consumes these types.
#pragma once

#include <cstdint>
#include <vector>

#include "btrfs/items.h"
#include "src/read/path_table.h"

namespace btrdedupe {

// A regular file as the subvolume tree describes it: one per scanned file, alive for most
// of the run, so packed into 64 bytes (mtime split: a Timespec member pads to 16).
struct ScannedFile {
  uint64_t subvolume = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  uint64_t inode_flags = 0;   // btrfs::kInodeNoDataSum, ...
  uint64_t parent = 0;        // directory inode of the first name (0: not known)
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  uint32_t root = 0;          // index into ScanResult::roots
  // The path relative to that root, as a node of ScanResult::paths (PathTable::kRoot when
  // the root is this file); the first name when hardlinked. relative_path() spells it.
  uint32_t path_node = PathTable::kRoot;
  // The same data (same extents at the same offsets) is also held by files in read-only
  // snapshots that the scan folded into this one: its storage stays referenced anyway.
  bool readonly_alias = false;
  // It has an inline extent (its first bytes live in the tree, not in a regular extent):
  // what its regular extents leave uncovered is then not only holes, so it has no hole map
  // and never matches as a whole file (src/fingerprint/content_hash.h).
  bool inline_data = false;
  // A catalogued twin from outside the run's roots (a --hashfile run of a subfolder of the
  // catalog's roots): a dedupe source only, never a destination.
  bool outside_roots = false;
  // A path walk by an ordinary user: a file the user neither owns nor may write, which the
  // kernel will not dedupe into. A source only, never a destination.
  bool not_ours = false;

  // Never a dedupe destination: only a source for the files the run may write.
  bool source_only() const { return outside_roots || not_ours; }

  bool nodatasum() const { return inode_flags & btrfs::kInodeNoDataSum; }
  btrfs::Timespec mtime() const { return {mtime_sec, mtime_nsec}; }
  void set_mtime(btrfs::Timespec t) {
    mtime_sec = t.sec;
    mtime_nsec = t.nsec;
  }
};
static_assert(sizeof(ScannedFile) == 64);

// Where a file's byte range lives on disk. (disk_bytenr, extent_offset) is its physical
// identity: two ranges naming the same bytes of the same extent already share storage.
// One per regular extent item scanned (100k for 157k files): packed into 48 bytes.
struct FileExtent {
  uint32_t file = 0;            // index into ScanResult::files
  btrfs::Compression compression = btrfs::Compression::None;
  // A path walk's extent that FIEMAP could not vouch for: SHARED (another reference may lie
  // outside the scan) or ENCODED (its disk size is not told). Freed figures never count it.
  bool refs_unknown = false;
  uint64_t file_offset = 0;
  uint64_t length = 0;          // logical bytes in the file
  uint64_t disk_bytenr = 0;     // start of the on-disk extent
  uint64_t disk_num_bytes = 0;  // its on-disk (possibly compressed) size
  uint64_t extent_offset = 0;   // where this range starts inside the decompressed extent
};
static_assert(sizeof(FileExtent) == 48);

// Why a file range can never be a dedupe candidate.
struct PassedOver {
  uint64_t inline_extents = 0, inline_bytes = 0;
  uint64_t hole_extents = 0, hole_bytes = 0;
  uint64_t prealloc_extents = 0, prealloc_bytes = 0;
  uint64_t excluded_files = 0;
  // A path walk's files and directories it could not open (permissions): never read.
  uint64_t unreadable = 0;
  // ... and files it kept as sources only (ScannedFile::not_ours).
  uint64_t not_ours_files = 0;
  // Files of read-only snapshots whose extents equal a file already scanned: never a
  // destination, so only their existence is recorded (see ScannedFile::readonly_alias).
  uint64_t readonly_aliases = 0;
  // Disk addresses of the extents prealloc items name (unwritten parts of an extent whose
  // other parts hold data): such an extent stays allocated whatever a dedupe shares.
  std::vector<uint64_t> prealloc_bytenrs;
  void add(const PassedOver& more) {
    inline_extents += more.inline_extents, inline_bytes += more.inline_bytes;
    hole_extents += more.hole_extents, hole_bytes += more.hole_bytes;
    prealloc_extents += more.prealloc_extents, prealloc_bytes += more.prealloc_bytes;
    excluded_files += more.excluded_files;
    unreadable += more.unreadable;
    not_ours_files += more.not_ours_files;
    readonly_aliases += more.readonly_aliases;
    prealloc_bytenrs.insert(prealloc_bytenrs.end(), more.prealloc_bytenrs.begin(),
                            more.prealloc_bytenrs.end());
  }
};

}  // namespace btrdedupe
