// A full run read in windows of files (catalog_session.h): its start, which drops the old
// rows, and each next window; the first pass is in catalog_lookahead.cpp.
#include "src/catalog/catalog_session.h"

namespace btrdedupe {

btrfs::Result<std::optional<ScanResult>> CatalogSession::windowed_scan(
    const ScanScope& scope, const ScanOptions& options) {
  ScanResult base;
  auto scan = reader_->targeted(scope, options, base);
  return start_windows(std::move(scan), std::move(base));
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::windowed_scan(
    std::unique_ptr<IncrementalScan> scan, ScanResult base) {
  return start_windows(std::move(scan), std::move(base));
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::start_windows(
    btrfs::Result<std::unique_ptr<IncrementalScan>> scan, ScanResult base) {
  if (!scan) return scan.error();
  if (!*scan || !may_take_windows()) return std::optional<ScanResult>{};
  // A windowed run matches every file again and writes every row again: the old ones go
  // first, in the run's transaction (a run that fails leaves them as they were).
  const auto old_rows = catalog_->files_per_subvolume();
  if (!old_rows.empty()) {
    if (auto ok = catalog_->begin(); !ok) return ok.error();
    for (const auto& [subvolume, count] : old_rows)
      if (auto ok = catalog_->remove_subvolume_files(subvolume); !ok) return ok.error();
  }
  incremental_ = std::move(*scan);
  read_ = TreeRead::Windows;
  return std::optional<ScanResult>{std::move(base)};
}

btrfs::Result<bool> CatalogSession::next_window(ScanResult& window, size_t max_files,
                                                const IncrementalScan::FileAdded& added) {
  auto more = incremental_->read_window(window, max_files, added);
  if (!more) return more.error();
  incremental_->finish(window);
  return *more;
}

uint64_t CatalogSession::catalogued_files() const {
  uint64_t n = 0;
  for (const auto& [subvolume, count] : catalog_->files_per_subvolume()) n += count;
  return n;
}

double CatalogSession::read_fraction() {
  return read_ == TreeRead::Windows ? incremental_->read_fraction() : 1.0;
}

}  // namespace btrdedupe
