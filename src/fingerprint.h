// Read-once fingerprints: the per-sector checksums of every scanned file's content.
//
// Sums are gathered per PHYSICAL extent, then laid out per file, so an extent shared by
// k files or snapshots costs one csum lookup or one read, not k. Uncompressed extents with
// data checksums take their sums from the csum tree (no file data read). Compressed
// extents (summed over compressed bytes on disk) and nodatasum files are read, in physical
// order by several workers (src/extent_reads.h), and summed with the filesystem's own
// algorithm, so a compressed and an uncompressed copy of the same bytes get equal sums.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "btrfs/result.h"
#include "src/tree_scan.h"

namespace btrdedupe {

// One file's content as a sequence of sector checksums.
struct FileSums {
  std::vector<uint8_t> sums;  // sectors * csum_size bytes
  // Per sector: 0 for holes, prealloc, inline, unreadable. Bytes rather than a
  // vector<bool>: its 40-byte header, once per scanned file, cost more than the bits save.
  std::vector<uint8_t> known;
  bool complete() const;
};

struct FingerprintStats {
  uint64_t extents_from_csums = 0, bytes_from_csums = 0;  // logical bytes
  uint64_t extents_read = 0, bytes_read = 0;              // file data actually read
  uint64_t csum_searches = 0;                             // TREE_SEARCH_V2 calls on tree 7
  uint64_t read_errors = 0;
  std::vector<std::string> errors;                         // first few, "path: reason"
};

struct FingerprintResult {
  std::vector<FileSums> files;  // parallel to ScanResult::files
  FingerprintStats stats;
};

// Fingerprints every file of `scan`. Errors reading one file are counted and reported in
// stats; its unread sectors stay unknown and the run goes on. Fails only when the csum tree
// cannot be searched at all.
// on_progress, when set, is called from the calling thread with the bytes of extents done
// so far (decompressed, sector-rounded: about SharingSummary::unique_bytes in all): once
// the csum tree has been read, then as data is read.
// wanted, when given (one flag per file), limits the work to those files' extents; the
// other files get empty sums.
// threads: workers reading data (JobOptions::io_threads); 0 chooses by the storage
// (default_io_threads). The result is the same whatever the number.
btrfs::Result<FingerprintResult> fingerprint(
    const ScanResult& scan, const std::function<void(uint64_t bytes_done)>& on_progress = {},
    const std::vector<bool>* wanted = nullptr, unsigned threads = 0);

}  // namespace btrdedupe
