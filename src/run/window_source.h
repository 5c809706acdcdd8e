// A tree too large to hold whole, read in windows of files (CatalogSession::windowed_scan):
// each window is a batch, fingerprinted with its twins from earlier windows (and, in a
// dedupe run, from windows ahead: a first pass indexes every window before any dedupe),
// then dropped, so memory follows the window, not the tree. What the windows carry from
// one to the next about twins is the source's (WindowTwins). Its confirmation re-reads
// the window's destinations in place.
#pragma once

#include <cstdint>

#include "src/catalog/catalog_session.h"
#include "src/run/batch_source.h"
#include "src/run/run_context.h"
#include "src/run/window_twins.h"

namespace btrdedupe {

class WindowSource final : public BatchSource {
 public:
  // `base`: the session's windowed_scan result.
  WindowSource(CatalogSession& session, ScanResult base, const RunContext& run);

  const ScanResult& base() const override { return base_; }
  btrfs::Result<bool> start(FilesystemReport& r) override;
  btrfs::Result<bool> next(ScanResult& batch) override;
  RunPosition position(const ScanResult& batch, bool more, uint64_t bytes_before,
                       FilesystemReport& r) override;
  btrfs::Result<FingerprintResult> fingerprint(ScanResult& batch,
                                               const std::function<void(uint64_t)>& on_progress,
                                               FilesystemReport& r) override;
  const BatchRoles& roles() const override { return session_.roles(); }
  btrfs::Result<void> keep_short_hashes(
      const ScanResult& batch, std::span<const std::pair<uint32_t, uint64_t>> hashes) override {
    return session_.keep_short_hashes(batch, hashes);
  }
  btrfs::Result<const ScanResult*> confirm(ScanResult& batch,
                                           const std::vector<bool>& destinations) override;
  btrfs::Result<void> record(const ScanResult& last, const RunRecord& run) override;

  // What the windows keep of twins (its budgets are set before start()).
  WindowTwins& twins() { return twins_; }

 private:
  // A dedupe run's first pass: every window's rows before any dedupe (index_window). It
  // reads trees and csums, no data. False: stopped.
  btrfs::Result<bool> index_windows(FilesystemReport& r);

  CatalogSession& session_;
  ScanResult base_;
  const RunContext& run_;
  const JobOptions& o_;
  uint64_t window_files_;
  WindowTwins twins_;
};

}  // namespace btrdedupe
