#include "src/run/whole_scan_source.h"

#include <utility>

#include "src/run/heap_release.h"

namespace btrdedupe {
namespace {

btrfs::Result<ScanResult> scan_roots(const std::vector<std::string>& roots,
                                     const ScanOptions& options, const RootReader& reader) {
  std::vector<ScanResult> scans;
  for (const auto& r : roots) {
    auto s = reader.scan(r, options);
    if (!s) return s.error();
    scans.push_back(std::move(*s));
  }
  return merge_scans(std::move(scans));
}

// The confirmation reads trees and no data: no paths, no cap, no csum warm-up.
ScanOptions confirmation(ScanOptions options) {
  options.keep_paths = false;
  options.max_files = 0;
  options.warm_csum_tree = false;
  return options;
}

}  // namespace

WholeReread reread_roots(const ScanOptions& options, const RootReader& reader) {
  return {[o = confirmation(options), &reader](const ScanResult& batch) {
            std::vector<std::string> roots;
            for (const auto& root : batch.roots) roots.push_back(root.path);
            return scan_roots(roots, o, reader);
          },
          false};
}

WholeReread reread_subvolumes(ScanScope flat, const ScanOptions& options,
                              SubvolumeGround& ground) {
  return {[flat = std::move(flat), o = confirmation(options), &ground](const ScanResult&) {
            return ground.scan(flat.paths.front(), *flat.subvolumes, o);
          },
          false};
}

WholeReread reread_changed(CatalogSession& catalog) {
  return {[&catalog](const ScanResult& batch) { return catalog.confirm(batch); }, true};
}

WholeScanSource::WholeScanSource(ScanResult scan, CatalogSession* catalog, WholeReread reread,
                                 unsigned io_threads, btrfs::TreeSource* csums)
    : catalog_(catalog), reread_(std::move(reread)), io_threads_(io_threads), csums_(csums) {
  base_.roots = scan.roots;
  base_.fs = scan.fs;
  base_.subvolumes = scan.subvolumes;
  scan_ = std::move(scan);
}

btrfs::Result<bool> WholeScanSource::next(ScanResult& batch) {
  if (scan_) batch = std::move(*scan_);
  scan_.reset();
  release_free_heap();  // the scan's inode tables are gone
  return false;
}

RunPosition WholeScanSource::position(const ScanResult& batch, bool, uint64_t,
                                      FilesystemReport&) {
  RunPosition where;
  for (const auto& e : batch.extents) where.window_bytes += e.length;
  where.bytes_total = where.window_bytes;
  return where;
}

btrfs::Result<FingerprintResult> WholeScanSource::fingerprint(
    ScanResult& batch, const std::function<void(uint64_t)>& on_progress, FilesystemReport& r) {
  if (catalog_) return catalog_->fingerprint(batch, r.catalog, io_threads_);
  return btrdedupe::fingerprint(batch, on_progress, nullptr, io_threads_, csums_);
}

const BatchRoles& WholeScanSource::roles() const {
  return catalog_ ? catalog_->roles() : all_own_;
}

btrfs::Result<void> WholeScanSource::keep_short_hashes(
    const ScanResult& batch, std::span<const std::pair<uint32_t, uint64_t>> hashes) {
  if (!catalog_) return {};
  return catalog_->keep_short_hashes(batch, hashes);
}

btrfs::Result<const ScanResult*> WholeScanSource::confirm(ScanResult& batch,
                                                          const std::vector<bool>&) {
  // The confirmation needs neither the paths nor the extents (their figures are taken; the
  // catalog records files): room for the new scan. A full run's catalog took its files'
  // states at fingerprint(): their 11 MB for P need not sit beside the confirmation's.
  batch.paths = {};
  free_storage(batch.extents);
  if (!reread_.keeps_files) free_storage(batch.files);
  release_free_heap();
  auto after = reread_.read(batch);
  release_free_heap();
  if (!after) return after.error();
  after_ = std::move(*after);
  return &*after_;
}

btrfs::Result<void> WholeScanSource::record(const ScanResult& last, const RunRecord& run) {
  if (!catalog_) return {};
  return catalog_->record(last, after_ ? &*after_ : nullptr, run);
}

}  // namespace btrdedupe
