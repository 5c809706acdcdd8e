// A run's use of the catalog: skip what has not changed since the last run, fingerprint
// only changed files and the catalogued files they may duplicate, and record the result.
//
// Incremental rule: a subvolume whose generation equals the one recorded has not changed
// at all (any write to its tree raises it). When every scanned subvolume is unchanged, the
// run ends before reading any tree. Otherwise the trees are read (metadata only) and a file
// counts as changed when the catalog has no row for it or its size, mtime or inode flags
// differ; only changed files and their candidate twins are fingerprinted and matched.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "btrfs/result.h"
#include "src/catalog.h"
#include "src/fingerprint.h"
#include "src/job.h"
#include "src/tree_scan.h"

namespace btrdedupe {

class CatalogSession {
 public:
  // Opens the hashfile. With no paths in `options`, fills them (and the options that shape
  // results) from the catalog: a replay of its last run.
  static btrfs::Result<std::unique_ptr<CatalogSession>> open(JobOptions& options);

  // Binds the catalog to the filesystem of the job's paths and to its scope, and reads the
  // subvolume generations before any tree is read. True when nothing changed.
  // `will_scan` (a flat subvolume selection): the subvolumes the run is to scan; one the
  // last run did not scan (a new snapshot under --all-subvols) is a change.
  btrfs::Result<bool> unchanged_since_last_run(const JobOptions& options,
                                               const std::vector<uint64_t>* will_scan = nullptr);

  // Fingerprints the changed files of `scan` and the catalogued files they may duplicate;
  // other files keep empty (unknown) sums and are left out of matching.
  btrfs::Result<FingerprintResult> fingerprint(const ScanResult& scan, CatalogStats& stats);

  // Writes rows for the files fingerprinted, drops rows of files gone from the scan,
  // records each subvolume's generation and the run. `after`: the re-scan made after
  // dedupe (nullptr when nothing was deduped).
  btrfs::Result<void> record(const ScanResult& scan, const ScanResult* after,
                             const RunRecord& run);

  const std::string& path() const { return catalog_->path(); }

 private:
  explicit CatalogSession(std::unique_ptr<Catalog> c) : catalog_(std::move(c)) {}

  struct Fingerprinted {
    CatalogFile row;
    std::vector<uint64_t> blocks;
  };

  std::unique_ptr<Catalog> catalog_;
  std::string first_path_;
  std::unordered_map<uint64_t, uint64_t> generations_at_start_;
  uint64_t block_size_ = 128 * 1024;
  std::unordered_map<FileKey, CatalogFile, FileKeyHash> known_;
  std::unordered_map<FileKey, Fingerprinted, FileKeyHash> fingerprinted_;
};

}  // namespace btrdedupe
