// A tree held whole as one batch: the paths' scans merged by filesystem, a flat subvolume
// selection, or an incremental run's changed files (their catalogued twins join at the
// fingerprint). Its confirmation reads the same trees again into a new scan, once the
// batch's extents and paths are freed to make room for it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/catalog/catalog_session.h"
#include "src/run/batch_source.h"
#include "src/read/scan_scope.h"
#include "src/scope/subvolume_selection.h"

namespace btrdedupe {

// How a whole batch is read again after its dedupe. `keeps_files`: it needs the batch's
// files (an incremental run re-reads exactly them); otherwise they are freed first.
struct WholeReread {
  std::function<btrfs::Result<ScanResult>(const ScanResult& batch)> read;
  bool keeps_files = false;
};
// The roots of the batch read again with `options` (the first scan's: paths not kept).
WholeReread reread_roots(const ScanOptions& options, const RootReader& reader);
// The subvolumes of a flat selection read again, by the ground that read them first.
WholeReread reread_subvolumes(ScanScope flat, const ScanOptions& options,
                              SubvolumeGround& ground);
// The batch's files read again through the catalog's incremental reader.
WholeReread reread_changed(CatalogSession& catalog);

class WholeScanSource final : public BatchSource {
 public:
  // `catalog`: the hashfile's session, or nullptr (the run's other filesystems go
  // unrecorded: a hashfile serves one). `csums`: where a run without a catalog reads the
  // csum tree (nullptr: the kernel's; unit tests give items in memory).
  WholeScanSource(ScanResult scan, CatalogSession* catalog, WholeReread reread,
                  unsigned io_threads, btrfs::TreeSource* csums = nullptr);

  const ScanResult& base() const override { return base_; }
  btrfs::Result<bool> start(FilesystemReport&) override { return true; }
  btrfs::Result<bool> next(ScanResult& batch) override;
  RunPosition position(const ScanResult& batch, bool more, uint64_t bytes_before,
                       FilesystemReport& r) override;
  btrfs::Result<FingerprintResult> fingerprint(ScanResult& batch,
                                               const std::function<void(uint64_t)>& on_progress,
                                               FilesystemReport& r) override;
  const BatchRoles& roles() const override;
  btrfs::Result<void> keep_short_hashes(
      const ScanResult& batch, std::span<const std::pair<uint32_t, uint64_t>> hashes) override;
  btrfs::Result<const ScanResult*> confirm(ScanResult& batch,
                                           const std::vector<bool>& destinations) override;
  btrfs::Result<void> record(const ScanResult& last, const RunRecord& run) override;

 private:
  ScanResult base_;
  std::optional<ScanResult> scan_;   // until next() hands it over
  std::optional<ScanResult> after_;  // the confirmation's
  CatalogSession* catalog_;
  WholeReread reread_;
  unsigned io_threads_;
  btrfs::TreeSource* csums_;
  BatchRoles all_own_;
};

}  // namespace btrdedupe
