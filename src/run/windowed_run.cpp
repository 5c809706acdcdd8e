#include "src/run/windowed_run.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "src/run/run_stages.h"
#include "src/report/subvolume_report.h"

namespace btrdedupe {
namespace {

using UsageBySubvolume = std::map<uint64_t, SubvolumeUsage>;

void add_sharing(SharingSummary& into, const SharingSummary& more) {
  into.logical_bytes += more.logical_bytes;
  into.unique_bytes += more.unique_bytes;
  into.shared_bytes += more.shared_bytes;
  into.physical_extents += more.physical_extents;
  into.in_shared_extents += more.in_shared_extents;
  into.allocated_bytes += more.allocated_bytes;
}

void add_usage(UsageBySubvolume& into, const UsageBySubvolume& more) {
  for (const auto& [id, u] : more) {
    into[id].referenced += u.referenced;
    into[id].exclusive += u.exclusive;
  }
}

// What the windows add up to beside the report's own sums.
struct WindowTotals {
  UsageBySubvolume usage_before, usage_after;
  std::map<uint64_t, uint64_t> planned;  // bytes by destination subvolume
  RunPosition where;                     // of the window under way
};

// The run's position at the start of window r.windows: its data so far, and the whole
// run's, estimated from how far the windows have read the trees while more remain.
RunPosition window_position(CatalogSession& session, const ScanResult& window, bool more,
                            const JobOptions& o, const FilesystemReport& r,
                            uint64_t bytes_before) {
  RunPosition where;
  where.window = r.windows;
  where.dedupe = o.dedupe;
  where.bytes_before = bytes_before;
  for (const auto& e : window.extents) where.window_bytes += e.length;
  const uint64_t so_far = where.bytes_before + where.window_bytes;
  where.estimated = more;
  const double read = more ? session.read_fraction() : 1.0;
  if (read > 0) {
    where.windows = static_cast<uint64_t>(std::ceil(static_cast<double>(r.windows) / read));
    where.bytes_total = static_cast<uint64_t>(static_cast<double>(so_far) / read);
  }
  where.windows = std::max(where.windows, r.windows);
  where.bytes_total = std::max(where.bytes_total, so_far);
  return where;
}

// The run's figures that do not depend on its files, taken before the first window.
void start_report(const ScanResult& base, const JobOptions& o, FilesystemReport& r) {
  for (const auto& root : base.roots) r.roots.push_back(root.path);
  r.fsid = base.fs.fsid_string();
  r.subvolumes = base.subvolumes.size();
  r.excluded = base.excluded;
  if (o.list_groups)
    if (auto ok = r.groups.spill_to_disk(); !ok) r.error = ok.error().message();
}

// What the window's read counted, before any twin joins it: taken even from a window that
// kept no file (its files were all passed over or excluded), as the whole scan counts them.
void count_window(const ScanResult& window, FilesystemReport& r) {
  r.files += window.files.size() + window.files_without_extents;
  r.extents += window.extents.size();
  r.passed_over.add(window.passed_over);
  r.excluded += window.excluded;
}

// Fingerprints the window with its earlier twins and adds the window's figures to `r`.
btrfs::Result<FingerprintResult> fingerprint_window(CatalogSession& session, ScanResult& window,
                                                    const JobOptions& o, FilesystemReport& r) {
  const auto t = Clock::now();
  CatalogStats catalog;
  auto fp = session.fingerprint(window, catalog, o.io_threads);
  r.seconds.fingerprint += since(t);
  if (!fp) return fp;
  r.fingerprints.add(fp->stats);
  if (!o.hashfile.empty()) {
    r.catalog.used = true;
    r.catalog.upgraded_from = catalog.upgraded_from;
    r.catalog.files_changed += catalog.files_changed;
    r.catalog.candidates += catalog.candidates;
    r.catalog.stale_rows += catalog.stale_rows;
  }
  r.tree_items = window.tree_items;  // the reader's totals so far
  r.tree_searches = window.search_calls;
  return fp;
}

// Dedupes the window's plan and re-reads what changed: then `sharing` and `usage` are the
// window's figures after. False: the re-read failed (the run's error is set).
bool dedupe_window(CatalogSession& session, ScanResult& window, PlannedWork work,
                   const BatchRoles& roles, const JobOptions& o, ProgressSink* progress,
                   FilesystemReport& r,
                   SharingSummary& sharing, UsageBySubvolume& usage) {
  auto t = Clock::now();
  r.dedupe.add(dedupe_planned(window, work, o, progress, r));
  r.seconds.dedupe += since(t);
  std::vector<bool> destinations(window.files.size(), false);
  for (const auto& round : work.plan.rounds)
    for (const auto& d : round.destinations) destinations[d.file] = true;
  for (const auto& e : work.remainders.extents)  // rewritten remainders changed their files too
    for (const auto& range : e.ranges) destinations[range.file] = true;
  const auto extents = std::move(work.extents);
  const auto rewritten = std::move(work.rewritten);
  const auto files = std::move(work.destination_files);
  const auto footprint = std::move(work.footprint);
  work = {};
  t = Clock::now();
  report_progress(progress, "confirm", 0, 0);
  // Only destinations changed: they are read again, in the window itself.
  auto confirmed = session.confirm_window(window, destinations);
  r.seconds.confirm += since(t);
  if (!confirmed) {
    r.error = "re-reading the tree after dedupe: " + confirmed.error().message();
    return false;
  }
  sharing = summarize_sharing(window.extents, &window.files, roles);
  usage = subvolume_usage(window, roles);
  measure_freed_space(window, extents, footprint, rewritten, window.fs.generation, r);
  r.destination_extents_after += count_extents_of(window, files);
  return true;
}

// One window, read: fingerprint, match, plan, dedupe, confirm. False: it failed (the run's
// error is set) and no window follows.
bool run_window(CatalogSession& session, ScanResult& window, bool more, const JobOptions& o,
                ProgressSink* progress, FilesystemReport& r, WindowTotals& totals) {
  ++r.windows;
  totals.where = window_position(session, window, more, o, r,
                                 totals.where.bytes_before + totals.where.window_bytes);
  if (progress) progress->position(totals.where);
  auto fp = fingerprint_window(session, window, o, r);
  if (!fp) {
    r.error = fp.error().message();
    return false;
  }
  const BatchRoles& roles = session.roles();  // set by the fingerprint above, kept until the next
  auto sharing = summarize_sharing(window.extents, &window.files, roles);
  auto usage = subvolume_usage(window, roles);
  add_sharing(r.before, sharing);
  add_usage(totals.usage_before, usage);

  const auto t = Clock::now();
  auto work = match_and_plan(window, *fp, o, roles, progress, r);
  r.seconds.match += since(t);
  if (auto kept = session.keep_short_hashes(window, work.short_hashes); !kept) {
    r.error = kept.error().message();
    return false;
  }
  for (const auto& [id, bytes] : work.planned) totals.planned[id] += bytes;
  if (o.dedupe && !(o.stop && o.stop->load()) && !work.plan.rounds.empty()) {
    if (!dedupe_window(session, window, std::move(work), roles, o, progress, r, sharing,
                       usage))
      return false;
  } else {
    r.destination_extents_after += count_extents_of(window, work.destination_files);
  }
  add_sharing(r.after, sharing);
  add_usage(totals.usage_after, usage);
  if (progress && more) {  // the next window's scan starts where this one ended
    RunPosition coming = totals.where;
    coming.window = totals.where.window + 1;
    coming.windows = std::max(totals.where.windows, coming.window);
    coming.bytes_before += totals.where.window_bytes;
    coming.window_bytes = 0;
    progress->position(coming);
  }
  return true;
}

// Once the windows are done (or one failed): the figures of the whole run, and its record.
void finish_report(CatalogSession& session, const ScanResult& base, const JobOptions& o,
                   const WindowTotals& totals, FilesystemReport& r) {
  r.deduped = o.dedupe;
  auto all = btrfs::list_subvolumes(r.roots.front());
  r.per_subvolume = subvolume_figures(base.subvolumes, totals.usage_before,
                                      o.dedupe ? &totals.usage_after : nullptr, totals.planned,
                                      r.dedupe.bytes_by_subvolume,
                                      all ? *all : std::vector<btrfs::Subvolume>{});
  add_freed_by_subvolume(r);
  settle_allocated_after(r);
  if (r.error.empty()) record_in_catalog(&session, base, o.dedupe ? &base : nullptr, r);
}

ScanResult empty_window(const ScanResult& base) {
  ScanResult window;
  window.roots = base.roots;
  window.fs = base.fs;
  window.subvolumes = base.subvolumes;
  return window;
}

// A dedupe run's first pass: every window's catalog rows before any dedupe, so that each
// window then takes its files' twins from the windows to come too, and reads a source once
// for all its copies (CatalogSession::index_window). It reads trees and csums, no data.
// False: it failed (the run's error is set) or was stopped.
bool index_windows(CatalogSession& session, const ScanResult& base, const JobOptions& o,
                   ProgressSink* progress, FilesystemReport& r) {
  for (bool more = true; more;) {
    if (o.stop && o.stop->load()) return false;
    ScanResult window = empty_window(base);
    report_progress(progress, "index", static_cast<uint64_t>(session.read_fraction() * 1000),
                    1000);
    auto t = Clock::now();
    auto next = session.next_window(window, r.window_files);
    r.seconds.scan += since(t);
    if (!next) {
      r.error = next.error().message();
      return false;
    }
    more = *next;
    t = Clock::now();
    auto indexed = session.index_window(window);
    r.seconds.fingerprint += since(t);
    if (!indexed) {
      r.error = indexed.error().message();
      return false;
    }
  }
  session.rewind_windows();
  return true;
}

}  // namespace

void run_windowed(CatalogSession& session, const ScanResult& base, const JobOptions& o,
                  ProgressSink* progress, FilesystemReport& r) {
  start_report(base, o, r);
  r.window_files = o.window_files ? o.window_files : kWindowFiles;
  const uint64_t window_files = r.window_files;
  WindowTotals totals;
  if (!o.dedupe) session.keep_files_as_read();
  if (o.dedupe && !index_windows(session, base, o, progress, r)) {
    finish_report(session, base, o, totals, r);
    return;
  }
  for (bool more = true; more && !(o.stop && o.stop->load());) {
    ScanResult window = empty_window(base);
    const auto t = Clock::now();
    report_progress(progress, "scan", 0, 0);
    auto next = session.next_window(window, window_files);
    r.seconds.scan += since(t);
    if (!next) {
      r.error = next.error().message();
      break;
    }
    more = *next;
    count_window(window, r);
    if (window.files.empty()) continue;
    if (!run_window(session, window, more, o, progress, r, totals)) break;
  }
  finish_report(session, base, o, totals, r);
}

}  // namespace btrdedupe
