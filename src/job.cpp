#include "src/job.h"

#include <cerrno>
#include <ctime>
#include <map>
#include <memory>
#include <optional>

#include "src/catalog_session.h"
#include "src/filesystem_run.h"
#include "src/job_selection.h"
#include "src/run_stages.h"
#include "src/subvolume_selection.h"
#include "src/windowed_run.h"

namespace btrdedupe {

JobReport run_job(const JobOptions& options, ProgressSink* progress) {
  JobReport report;
  JobOptions o = options;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const btrfs::Timespec started_at{now.tv_sec, static_cast<uint32_t>(now.tv_nsec)};
  const int64_t started = started_at.sec;
  std::unique_ptr<CatalogSession> catalog;
  if (!o.hashfile.empty()) {
    // The catalog first: a replay takes its paths from it, and an unchanged tree is not read.
    auto session = CatalogSession::open(o);
    if (!session) {
      report.path_errors.push_back(session.error().message());
      report.options = o;
      return report;
    }
    catalog = std::move(*session);
  }
  std::optional<ResolvedSelection> selection;
  if (!o.subvolumes.empty()) {
    selection = select_subvolumes(o, report);
    if (!selection) {
      report.options = o;
      return report;
    }
  }
  if (catalog) {
    std::vector<uint64_t> will_scan;
    if (selection)
      for (const auto& root : selection->roots) will_scan.push_back(root.id);
    auto unchanged = catalog->unchanged_since_last_run(
        o, selection && o.subvolumes.flat() ? &will_scan : nullptr);
    report.options = o;
    if (!unchanged) {
      report.path_errors.push_back(unchanged.error().message());
      return report;
    }
    if (*unchanged) {
      FilesystemReport r;
      r.roots = o.paths;
      r.catalog.used = r.catalog.unchanged = true;
      r.started = started;
      r.started_at = started_at;
      record_in_catalog(catalog.get(), ScanResult{}, nullptr, r);
      report.filesystems.push_back(std::move(r));
      return report;
    }
  }
  report.options = o;
  ScanOptions scan_options;
  scan_options.recursive = o.recursive;
  scan_options.min_file_size = o.min_file_size;
  scan_options.exclude = o.exclude;
  scan_options.fold_readonly_aliases = !o.dedupe_readonly;
  if (selection) scan_options.excluded_subvolumes = selection->excluded;

  if (catalog && !(selection && o.subvolumes.flat() && selection->roots.empty())) {
    // Only what changed since the last run, when the catalog allows it.
    const auto t = Clock::now();
    report_progress(progress, "scan", 0, 0);
    auto scan = selection && o.subvolumes.flat()
                    ? catalog->incremental_scan(o.paths.front(), selection->roots, scan_options)
                    : catalog->incremental_scan(o.paths, scan_options);
    if (!scan) {
      report.path_errors.push_back(scan.error().message());
      return report;
    }
    if (*scan) {
      FilesystemReport r;
      r.started = started;
      r.started_at = started_at;
      r.seconds.scan = since(t);
      run_filesystem(std::move(**scan), o, scan_options, progress, catalog.get(), r);
      report.filesystems.push_back(std::move(r));
      report.stopped = o.stop && o.stop->load();
      return report;
    }
  }

  const bool flat_selection = selection && o.subvolumes.flat();
  if (flat_selection && selection->roots.empty()) {
    report.path_errors.push_back("no subvolume left to scan on the filesystem of " +
                                 o.paths.front());
    return report;
  }
  // A tree too large to hold whole is read in windows: always with -B, else once a scan
  // capped at whole_run_files finds more (CatalogSession::may_take_windows).
  const bool may_window = !catalog || catalog->may_take_windows();
  auto run_in_windows = [&]() -> bool {  // false: not possible here, scan whole
    std::unique_ptr<CatalogSession> temporary;
    CatalogSession* session = catalog.get();
    if (!session) {
      auto opened = CatalogSession::open_temporary(o);
      auto bound = opened ? (*opened)->unchanged_since_last_run(o) : btrfs::Result<bool>(opened.error());
      if (!bound) {
        report.path_errors.push_back(bound.error().message());
        return true;
      }
      temporary = std::move(*opened);
      session = temporary.get();
    }
    const auto t = Clock::now();
    auto base = flat_selection
                    ? session->windowed_scan(o.paths.front(), selection->roots, scan_options)
                    : session->windowed_scan(o.paths, scan_options);
    if (!base) {
      report.path_errors.push_back(base.error().message());
      return true;
    }
    if (!*base) return false;
    FilesystemReport r;
    r.started = started;
    r.started_at = started_at;
    r.seconds.scan = since(t);
    run_windowed(*session, **base, o, progress, r);
    report.filesystems.push_back(std::move(r));
    report.stopped = o.stop && o.stop->load();
    return true;
  };
  if (may_window && o.window_files && run_in_windows()) return report;
  if (may_window && !o.window_files) scan_options.max_files = o.whole_run_files;
  auto too_many_files = [&](const btrfs::Error& e) {
    return scan_options.max_files && e.code == EFBIG;
  };

  if (flat_selection) {  // exactly the chosen subvolumes, as one scan
    FilesystemReport r;
    r.started = started;
    r.started_at = started_at;
    const FlatScan flat{o.paths.front(), selection->roots};
    const auto t = Clock::now();
    report_progress(progress, "scan", 0, 0);
    auto scan = flat.run(scan_options);
    if (!scan && too_many_files(scan.error())) {
      if (run_in_windows()) return report;
      scan_options.max_files = 0;
      scan = flat.run(scan_options);
    }
    r.seconds.scan = since(t);
    if (!scan) {
      r.roots = o.paths;
      r.error = scan.error().message();
    } else {
      run_filesystem(std::move(*scan), o, scan_options, progress, catalog.get(), r, &flat);
    }
    report.filesystems.push_back(std::move(r));
    report.stopped = o.stop && o.stop->load();
    return report;
  }

  // Scan each path; paths of one filesystem are deduped together, in the order given.
  std::vector<std::string> fs_order;
  std::map<std::string, std::vector<ScanResult>> by_fs;
  std::map<std::string, double> scan_seconds;
  std::vector<std::string> scan_errors;
  const uint64_t cap = scan_options.max_files;
  for (size_t p = 0, files = 0; p < o.paths.size(); ++p) {
    const auto t = Clock::now();
    report_progress(progress, "scan", 0, 0);
    ScanOptions capped = scan_options;
    if (cap) capped.max_files = cap > files ? cap - files : 1;
    auto scan = scan_tree(o.paths[p], capped);
    if (!scan && too_many_files(scan.error())) {
      if (run_in_windows()) return report;
      scan_options.max_files = 0;  // windows cannot be taken here: scan whole, from the start
      fs_order.clear(), by_fs.clear(), scan_seconds.clear(), scan_errors.clear();
      p = static_cast<size_t>(-1), files = 0;
      continue;
    }
    if (!scan) {
      scan_errors.push_back(scan.error().message());
      continue;
    }
    files += scan->files.size();
    const std::string fsid = scan->fs.fsid_string();
    if (!by_fs.count(fsid)) fs_order.push_back(fsid);
    by_fs[fsid].push_back(std::move(*scan));
    scan_seconds[fsid] += since(t);
  }
  report.path_errors.insert(report.path_errors.end(), scan_errors.begin(), scan_errors.end());
  scan_options.max_files = 0;  // the confirmation scan reads what the first one did
  for (const auto& fsid : fs_order) {
    FilesystemReport r;
    r.started = started;
    r.started_at = started_at;
    r.seconds.scan = scan_seconds[fsid];
    auto merged = merge_scans(std::move(by_fs[fsid]));
    if (!merged) {
      r.error = merged.error().message();
    } else if (catalog && fsid != fs_order.front()) {
      r.error = "a hashfile serves one filesystem: " + merged->roots[0].path + " is on another";
    } else {
      run_filesystem(std::move(*merged), o, scan_options, progress,
                     fsid == fs_order.front() ? catalog.get() : nullptr, r);
    }
    report.filesystems.push_back(std::move(r));
  }
  report.stopped = o.stop && o.stop->load();
  return report;
}

}  // namespace btrdedupe
