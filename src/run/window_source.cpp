#include "src/run/window_source.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "src/run/run_stages.h"

namespace btrdedupe {

WindowSource::WindowSource(CatalogSession& session, ScanResult base, const RunContext& run)
    : session_(session), base_(std::move(base)), run_(run), o_(run.options),
      window_files_(o_.window_files ? o_.window_files : kWindowFiles),
      twins_(session.window_reader()) {}

btrfs::Result<bool> WindowSource::start(FilesystemReport& r) {
  r.window_files = window_files_;
  // A window's group listings go to disk as they come: memory follows the window.
  if (o_.list_groups)
    if (auto ok = r.groups.spill_to_disk(); !ok) return ok.error();
  if (!o_.dedupe) {
    twins_.keep_files_as_read();
    return true;
  }
  return index_windows(r);
}

btrfs::Result<bool> WindowSource::index_windows(FilesystemReport& r) {
  for (bool more = true; more;) {
    if (run_.stopped()) return false;
    ScanResult window = empty_batch(base_);
    run_.report("index", static_cast<uint64_t>(session_.read_fraction() * 1000), 1000);
    auto t = Clock::now();
    auto next = session_.next_window(window, window_files_);
    r.seconds.scan += since(t);
    if (!next) return next.error();
    more = *next;
    t = Clock::now();
    auto indexed = session_.index_window(window);
    r.seconds.fingerprint += since(t);
    if (!indexed) return indexed.error();
  }
  session_.rewind_windows();
  twins_.look_ahead();
  return true;
}

btrfs::Result<bool> WindowSource::next(ScanResult& batch) {
  return session_.next_window(batch, window_files_, twins_.as_read());
}

// The run's data so far, and the whole run's, estimated from how far the windows have read
// the trees while more remain.
RunPosition WindowSource::position(const ScanResult& batch, bool more, uint64_t bytes_before,
                                   FilesystemReport& r) {
  ++r.windows;
  RunPosition where;
  where.window = r.windows;
  where.bytes_before = bytes_before;
  for (const auto& e : batch.extents) where.window_bytes += e.length;
  const uint64_t so_far = where.bytes_before + where.window_bytes;
  where.estimated = more;
  const double read = more ? session_.read_fraction() : 1.0;
  if (read > 0) {
    where.windows = static_cast<uint64_t>(std::ceil(static_cast<double>(r.windows) / read));
    where.bytes_total = static_cast<uint64_t>(static_cast<double>(so_far) / read);
  }
  where.windows = std::max(where.windows, r.windows);
  where.bytes_total = std::max(where.bytes_total, so_far);
  return where;
}

btrfs::Result<FingerprintResult> WindowSource::fingerprint(
    ScanResult& batch, const std::function<void(uint64_t)>&, FilesystemReport& r) {
  CatalogStats catalog;
  auto fp = session_.fingerprint_window(batch, catalog, twins_, o_.io_threads);
  if (fp && !o_.hashfile.empty()) {  // a temporary catalog is not the user's to hear of
    r.catalog.used = true;
    r.catalog.upgraded_from = catalog.upgraded_from;
    r.catalog.files_changed += catalog.files_changed;
    r.catalog.candidates += catalog.candidates;
    r.catalog.stale_rows += catalog.stale_rows;
  }
  return fp;
}

btrfs::Result<const ScanResult*> WindowSource::confirm(ScanResult& batch,
                                                       const std::vector<bool>& destinations) {
  if (auto ok = session_.confirm_window(batch, destinations); !ok) return ok.error();
  return &batch;
}

btrfs::Result<void> WindowSource::record(const ScanResult&, const RunRecord& run) {
  return session_.record_windows(base_, o_.dedupe ? &base_ : nullptr, run);
}

}  // namespace btrdedupe
