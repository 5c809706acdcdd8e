#include "src/job.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <map>
#include <optional>
#include <set>

#include "src/catalog_session.h"
#include "src/dedupe_plan.h"
#include "src/duplicate_match.h"
#include "src/heap_release.h"
#include "src/run_stages.h"
#include "src/scanned_file.h"
#include "src/subvolume_report.h"
#include "src/subvolume_selection.h"
#include "src/windowed_run.h"

namespace btrdedupe {
namespace {

btrfs::Result<ScanResult> scan_roots(const std::vector<std::string>& roots,
                                     const ScanOptions& options) {
  std::vector<ScanResult> scans;
  for (const auto& r : roots) {
    auto s = scan_tree(r, options);
    if (!s) return s.error();
    scans.push_back(std::move(*s));
  }
  return merge_scans(std::move(scans));
}

// With --subvol or --all-subvols: exactly these subvolumes, read as one scan (again to confirm).
struct FlatScan {
  std::string fs_path;
  std::vector<SubvolumeRoot> subvolumes;
  btrfs::Result<ScanResult> run(const ScanOptions& options) const {
    return scan_subvolumes(fs_path, subvolumes, options);
  }
};

// Per-subvolume figures of the run (after: from the confirmation scan, when there was a
// dedupe).
void fill_per_subvolume(const ScanResult& scan, const std::map<uint64_t, SubvolumeUsage>& before,
                        const std::map<uint64_t, SubvolumeUsage>* after,
                        const std::map<uint64_t, uint64_t>& planned, FilesystemReport& r) {
  auto all = btrfs::list_subvolumes(r.roots.front());
  r.per_subvolume = subvolume_figures(scan.subvolumes, before, after, planned,
                                      r.dedupe.bytes_by_subvolume,
                                      all ? *all : std::vector<btrfs::Subvolume>{});
  add_freed_by_subvolume(r);
}

void run_filesystem(ScanResult scan, const JobOptions& o, const ScanOptions& scan_options,
                    ProgressSink* progress, CatalogSession* catalog, FilesystemReport& r,
                    const FlatScan* flat = nullptr) {
  for (const auto& root : scan.roots) r.roots.push_back(root.path);
  r.fsid = scan.fs.fsid_string();
  r.subvolumes = scan.subvolumes.size();
  r.files = scan.files.size();
  r.extents = scan.extents.size();
  r.tree_items = scan.tree_items;
  r.tree_searches = scan.search_calls;
  r.passed_over = scan.passed_over;
  r.excluded = scan.excluded;
  r.before = r.after = summarize_sharing(scan.extents, nullptr, &scan.files);
  release_free_heap();  // the scan's inode tables are gone
  if (progress) {
    RunPosition where;
    where.window_bytes = where.bytes_total = r.before.logical_bytes;
    where.dedupe = o.dedupe;
    progress->position(where);
  }

  auto t = Clock::now();
  report_progress(progress, "fingerprint", 0, r.before.unique_bytes);
  auto fp = catalog ? catalog->fingerprint(scan, r.catalog, o.io_threads)
                    : fingerprint(
                          scan,
                          [&](uint64_t done) {
                            report_progress(progress, "fingerprint",
                                            std::min(done, r.before.unique_bytes),
                                            r.before.unique_bytes);
                          },
                          nullptr, o.io_threads);
  r.seconds.fingerprint = since(t);
  if (!fp) {
    r.error = fp.error().message();
    return;
  }
  r.fingerprints = fp->stats;
  if (catalog && catalog->incremental()) {
    // The candidates joined the scan: its figures cover changed files and their twins.
    r.files = scan.files.size();
    r.extents = scan.extents.size();
    r.tree_items = scan.tree_items;
    r.tree_searches = scan.search_calls;
    r.passed_over = scan.passed_over;
    r.before = r.after = summarize_sharing(scan.extents, nullptr, &scan.files);
  }
  report_progress(progress, "fingerprint", r.before.unique_bytes, r.before.unique_bytes);

  t = Clock::now();
  auto work = match_and_plan(scan, *fp, o, nullptr, progress, r);
  auto& [plan, planned, extents] = work;
  r.seconds.match = since(t);
  const bool stopped_before_dedupe = o.stop && o.stop->load();
  if (!o.dedupe || (stopped_before_dedupe && !o.most_valuable_first)) {
    fill_per_subvolume(scan, subvolume_usage(scan), nullptr, planned, r);
    record_in_catalog(catalog, scan, nullptr, r);
    return;
  }

  t = Clock::now();
  r.dedupe = dedupe_planned(scan, plan, o, progress, r);
  r.seconds.dedupe = since(t);
  if (r.dedupe.calls == 0) {  // nothing changed on disk: no confirmation to read
    const auto usage = subvolume_usage(scan);
    fill_per_subvolume(scan, usage, &usage, planned, r);
    record_in_catalog(catalog, scan, nullptr, r);
    return;
  }
  // What is left needs neither the plan, the paths nor the extents (their figures taken
  // first; the catalog records files): make room for the confirmation scan.
  const auto usage_before = subvolume_usage(scan);
  plan = {};
  scan.paths = {};
  free_storage(scan.extents);
  // A full run's catalog took its files' states at fingerprint(): their 11 MB for P need
  // not sit beside the confirmation's. An incremental run re-reads exactly these files.
  if (!(catalog && catalog->incremental())) free_storage(scan.files);
  release_free_heap();

  // Confirm from the tree: what shares storage now, not what the calls reported.
  t = Clock::now();
  report_progress(progress, "confirm", 0, 0);
  std::vector<std::string> roots = r.roots;
  ScanOptions confirm_options = scan_options;
  confirm_options.keep_paths = false;
  confirm_options.max_files = 0;
  confirm_options.warm_csum_tree = false;  // no fingerprint follows
  auto after = catalog && catalog->incremental() ? catalog->confirm(scan)
               : flat                               ? flat->run(confirm_options)
                                                    : scan_roots(roots, confirm_options);
  r.seconds.confirm = since(t);
  release_free_heap();
  if (!after) {
    r.error = "re-reading the tree after dedupe: " + after.error().message();
    return;
  }
  r.after = summarize_sharing(after->extents, nullptr, &after->files);
  measure_freed_space(*after, extents, r);
  settle_allocated_after(r);
  const auto usage_after = subvolume_usage(*after);
  free_storage(after->extents);
  release_free_heap();
  fill_per_subvolume(scan, usage_before, &usage_after, planned, r);
  record_in_catalog(catalog, scan, &*after, r);
}

// Resolves o.subvolumes on the filesystem of the paths (subvolume options work on one) and
// rewrites its words as ids, so a hashfile's scope names the subvolumes however they were
// given. Errors go to report.path_errors; nullopt: nothing can run.
std::optional<ResolvedSelection> select_subvolumes(JobOptions& o, JobReport& report) {
  if (o.paths.empty()) {
    report.path_errors.push_back("subvolume options need a PATH on the filesystem");
    return std::nullopt;
  }
  std::string fsid;
  for (const auto& p : o.paths) {
    auto fd = btrfs::Fd::open(p, O_RDONLY | O_NONBLOCK);
    if (!fd) {
      report.path_errors.push_back(fd.error().message());
      return std::nullopt;
    }
    auto ok = btrfs::check_is_btrfs(fd->get(), p);
    auto info = ok ? btrfs::read_fs_info(fd->get()) : btrfs::Result<btrfs::FsInfo>(ok.error());
    if (!info) {
      report.path_errors.push_back(info.error().message());
      return std::nullopt;
    }
    if (fsid.empty()) fsid = info->fsid_string();
    if (fsid != info->fsid_string()) {
      report.path_errors.push_back("--subvol, --exclude-subvol and --all-subvols work on one "
                                   "filesystem: " + p + " is not on the filesystem of " +
                                   o.paths.front());
      return std::nullopt;
    }
  }
  auto r = resolve_selection(o.paths.front(), o.subvolumes);
  if (!r) {
    report.path_errors.push_back(r.error().message());
    return std::nullopt;
  }
  o.subvolumes.include.clear();
  for (uint64_t id : r->included) o.subvolumes.include.push_back(std::to_string(id));
  o.subvolumes.exclude.clear();
  for (uint64_t id : r->excluded) o.subvolumes.exclude.push_back(std::to_string(id));
  report.path_errors.insert(report.path_errors.end(), r->errors.begin(), r->errors.end());
  report.notes.insert(report.notes.end(), r->notes.begin(), r->notes.end());
  return std::move(*r);
}

}  // namespace

namespace {
// Refusals that say what the file is (nodatacow pair, immutable, swapfile, busy with a send),
// not that something broke: the range is skipped and the run goes on (exit code 3).
bool refused_for_what_the_file_is(int code) {
  return code == EINVAL || code == EPERM || code == ETXTBSY || code == EAGAIN || code == EROFS ||
         code == EXDEV;
}
}  // namespace

int JobReport::exit_code() const {
  if (!path_errors.empty()) return 1;
  bool skipped = false;
  for (const auto& fs : filesystems) {
    if (!fs.error.empty() || fs.fingerprints.read_errors) return 1;
    for (const auto& [code, ranges] : fs.dedupe.errors_by_code)
      if (ranges && !refused_for_what_the_file_is(code)) return 1;
    if (fs.dedupe.ranges_failed || fs.dedupe.ranges_changed || fs.dedupe.ranges_differ)
      skipped = true;
  }
  return skipped ? 3 : 0;
}

int64_t JobReport::duperemove_net_change() const {
  int64_t net = 0;
  for (const auto& fs : filesystems)
    net += static_cast<int64_t>(fs.after.in_shared_extents) -
           static_cast<int64_t>(fs.before.in_shared_extents);
  return net;
}

int64_t JobReport::net_shared_change() const {
  int64_t net = 0;
  for (const auto& fs : filesystems)
    net += static_cast<int64_t>(fs.after.shared_bytes) - static_cast<int64_t>(fs.before.shared_bytes);
  return net;
}

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
