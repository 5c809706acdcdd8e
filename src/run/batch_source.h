// Where a filesystem's run takes the files it matches and dedupes: batches from one source,
// chosen once by the job (src/run/job.cpp). Every batch goes through the same stages
// (src/run/batch_loop.h): fingerprint, match, plan, dedupe, confirm; the source answers the
// questions whose answers depend on how the trees were read.
//
// The sources: a tree held whole (the paths' scans merged, a flat subvolume selection, an
// incremental run's changed files; src/run/whole_scan_source.h) is one batch; a tree too large
// to hold whole is read in windows (src/run/window_source.h), each window one batch.
// A new source (a follower's cycles, a path walk) implements this contract and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>

#include "btrfs/result.h"
#include "src/catalog/catalog.h"
#include "src/fingerprint/fingerprint.h"
#include "src/match/batch_roles.h"
#include "src/read/tree_scan.h"
#include "src/report/job_report.h"
#include "src/report/progress_sink.h"

namespace btrdedupe {

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  // The run's roots, filesystem and subvolumes, and what its reading left out before any
  // batch (ScanResult::excluded); no file.
  virtual const ScanResult& base() const = 0;
  // Before the first batch: what the source must do first (a windowed dedupe run indexes
  // every window). False: the run was stopped meanwhile, and no batch follows; a failure
  // is the run's error.
  virtual btrfs::Result<bool> start(FilesystemReport& r) = 0;
  // Fills `batch` (base()'s roots, filesystem and subvolumes, no file) with the next batch.
  // False once this batch is the last (it may still hold files).
  virtual btrfs::Result<bool> next(ScanResult& batch) = 0;
  // The run's position at the start of `batch` (ProgressSink::position); `bytes_before`: the
  // data of the batches done. Counts the batch in r.windows when it is a window.
  virtual RunPosition position(const ScanResult& batch, bool more, uint64_t bytes_before,
                               FilesystemReport& r) = 0;
  // Sums for the batch's files, and the twins that join it (those catalogued, of earlier or
  // later windows); their roles are roles() until the next batch. Adds its catalog figures
  // to r.catalog. `on_progress`: bytes of the batch's extents done, where the source can tell.
  virtual btrfs::Result<FingerprintResult> fingerprint(
      ScanResult& batch, const std::function<void(uint64_t)>& on_progress,
      FilesystemReport& r) = 0;
  virtual const BatchRoles& roles() const = 0;
  // The data hashes a short-file proof read, kept for later batches and runs.
  virtual btrfs::Result<void> keep_short_hashes(
      const ScanResult& batch, std::span<const std::pair<uint32_t, uint64_t>> hashes) = 0;
  // After a dedupe changed the files marked in `destinations`: the trees as they are now,
  // either `batch` re-read in place or a new scan the source holds (then roles() leave no
  // file out: the new scan's files are not the batch's by index). The batch's plan is gone;
  // the source may free what the confirmation does not need.
  virtual btrfs::Result<const ScanResult*> confirm(ScanResult& batch,
                                                   const std::vector<bool>& destinations) = 0;
  // Once the batches are done without an error: the run recorded (a hashfile's rows,
  // generations and run). `last`: the last batch.
  virtual btrfs::Result<void> record(const ScanResult& last, const RunRecord& run) = 0;
};

// A batch to fill: `base`'s roots, filesystem and subvolumes, no file.
inline ScanResult empty_batch(const ScanResult& base) {
  ScanResult batch;
  batch.roots = base.roots;
  batch.fs = base.fs;
  batch.subvolumes = base.subvolumes;
  return batch;
}

}  // namespace btrdedupe
