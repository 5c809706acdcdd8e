// Read-once fingerprints: the per-sector checksums of every scanned file's content.
//
// Sums are gathered per PHYSICAL extent, then laid out per file, so an extent shared by
// k files or snapshots costs one csum lookup or one read, not k. Uncompressed extents with
// data checksums take their sums from the csum tree (no file data read). Compressed
// extents (summed over compressed bytes on disk) and nodatasum files are read, in physical
// order by several workers (src/fingerprint/extent_reads.h), and summed with the filesystem's own
// algorithm, so a compressed and an uncompressed copy of the same bytes get equal sums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "btrfs/result.h"
#include "btrfs/tree_source.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// One file's content as a sequence of sector checksums: a read-only view into a
// FileSumsTable, valid while the table lives and is not added to.
struct FileSumsView {
  std::span<const uint8_t> sums;   // sectors() * csum_size bytes
  std::span<const uint8_t> known;  // per sector: 0 for holes, prealloc, inline, unreadable
  uint64_t sectors() const { return known.size(); }
  bool complete() const;
};

// Every file's sums, in file order. One flat buffer and an 8-byte offset per file, not two
// vectors per file: their 48-byte header and two allocations, once per scanned file, cost
// more than most files' sums. Known flags stay bytes: bits would save at most a fifth of
// the table (4-byte crc32c sums) and cost every reader a shift.
class FileSumsTable {
 public:
  FileSumsTable() = default;
  explicit FileSumsTable(uint16_t csum_size) : csum_size_(csum_size) {}

  size_t size() const { return ends_.size(); }
  uint64_t total_sectors() const { return known_.size(); }
  FileSumsView operator[](size_t file) const;

  // Appends the next file with `sectors` sectors, all unknown (0 costs only its offset).
  void add(uint64_t sectors);
  void add(FileSumsView file);  // a copy of another table's file
  void reserve(size_t files, uint64_t sectors);

  // A table of `files` files, file i a copy of pick(i) (a view into other tables): how
  // passes over different files are merged, or files reordered.
  static FileSumsTable gather(size_t files, uint16_t csum_size,
                              const std::function<FileSumsView(size_t)>& pick);

  // The writable sums and known flags of a file already added, to fill it in.
  std::span<uint8_t> sums(size_t file);
  std::span<uint8_t> known(size_t file);

 private:
  uint64_t begin(size_t file) const { return file == 0 ? 0 : ends_[file - 1]; }

  uint16_t csum_size_ = 0;
  // Per file, the end of its sectors. 64-bit: a large tree exceeds 2^32 sectors (16 TiB).
  std::vector<uint64_t> ends_;
  std::vector<uint8_t> sums_, known_;
};

struct FingerprintStats {
  uint64_t extents_from_csums = 0, bytes_from_csums = 0;  // logical bytes
  uint64_t extents_read = 0, bytes_read = 0;              // file data actually read
  // Compressed extents that took the sums of a twin holding the same compressed bytes
  // (src/fingerprint/compressed_twins.h): not read. Logical bytes.
  uint64_t extents_from_twins = 0, bytes_from_twins = 0;
  // Why the extents read were read, in their logical bytes: one extent of each group of
  // compressed twins, for the whole group; compressed extents with no twin; twins, for
  // sectors their group's read extent does not cover; extents with no checksums
  // (nodatasum files, or sums missing from the csum tree).
  struct ReadFor {
    uint64_t twin_groups = 0, compressed_without_twin = 0, twin_remainders = 0,
             without_checksums = 0;
    // Each figure with what it is, for a report's line.
    std::array<std::pair<uint64_t, const char*>, 4> reasons() const {
      return {{{twin_groups, "one extent of each group of compressed twins"},
               {compressed_without_twin, "compressed extents with no twin"},
               {twin_remainders, "twins' sectors beyond their group's read extent"},
               {without_checksums, "extents without checksums (nodatasum)"}}};
    }
  } read_for;
  uint64_t csum_searches = 0;                             // TREE_SEARCH_V2 calls on tree 7
  uint64_t read_errors = 0;
  std::vector<std::string> errors;                         // first few, "path: reason"
  // Adds the figures of another read (candidates, a later window) to these.
  void add(const FingerprintStats& more);
};

struct FingerprintResult {
  FileSumsTable files;  // parallel to ScanResult::files
  FingerprintStats stats;
  // XXH3-64 of a one-sector file's data by file index, where a catalog row already held it
  // (CatalogFile::short_hash): prove_short_files takes it instead of reading the file.
  std::unordered_map<uint32_t, uint64_t> short_hashes;
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
// csums: where the csum tree is read (nullptr: the kernel's, through the first root); unit
// tests give synthetic csum items. Extents it has no sums for are read from the files.
btrfs::Result<FingerprintResult> fingerprint(
    const ScanResult& scan, const std::function<void(uint64_t bytes_done)>& on_progress = {},
    const std::vector<bool>* wanted = nullptr, unsigned threads = 0,
    btrfs::TreeSource* csums = nullptr);

}  // namespace btrdedupe
