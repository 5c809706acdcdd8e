#include "src/run/filesystem_run.h"

#include <algorithm>
#include <map>

#include "src/run/heap_release.h"
#include "src/run/run_stages.h"
#include "src/report/subvolume_report.h"

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

// The figures of what the scan holds.
void take_scan_figures(const ScanResult& scan, FilesystemReport& r) {
  r.files = scan.files.size();
  r.extents = scan.extents.size();
  r.tree_items = scan.tree_items;
  r.tree_searches = scan.search_calls;
  r.passed_over = scan.passed_over;
  r.before = r.after = summarize_sharing(scan.extents, &scan.files);
}

void start_report(const ScanResult& scan, const JobOptions& o, ProgressSink* progress,
                  FilesystemReport& r) {
  for (const auto& root : scan.roots) r.roots.push_back(root.path);
  r.fsid = scan.fs.fsid_string();
  r.subvolumes = scan.subvolumes.size();
  r.excluded = scan.excluded;
  take_scan_figures(scan, r);
  release_free_heap();  // the scan's inode tables are gone
  if (progress) {
    RunPosition where;
    where.window_bytes = where.bytes_total = r.before.logical_bytes;
    where.dedupe = o.dedupe;
    progress->position(where);
  }
}

btrfs::Result<FingerprintResult> fingerprint_scan(ScanResult& scan, const JobOptions& o,
                                                  ProgressSink* progress, CatalogSession* catalog,
                                                  FilesystemReport& r) {
  const auto t = Clock::now();
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
  if (!fp) return fp;
  r.fingerprints = fp->stats;
  // The candidates joined the scan: its figures cover changed files and their twins.
  if (catalog && catalog->incremental()) take_scan_figures(scan, r);
  report_progress(progress, "fingerprint", r.before.unique_bytes, r.before.unique_bytes);
  return fp;
}

// After a dedupe that changed the disk: the tree read again, for what shares storage now
// rather than what the calls reported, and the run's figures after.
void confirm_dedupe(ScanResult& scan, PlannedWork& work, const ScanOptions& scan_options,
                    ProgressSink* progress, CatalogSession* catalog, const FlatScan* flat,
                    FilesystemReport& r) {
  // What is left needs neither the plan, the paths nor the extents (their figures taken
  // first; the catalog records files): make room for the confirmation scan.
  const auto usage_before = subvolume_usage(scan);
  work.plan = {};
  scan.paths = {};
  free_storage(scan.extents);
  // A full run's catalog took its files' states at fingerprint(): their 11 MB for P need
  // not sit beside the confirmation's. An incremental run re-reads exactly these files.
  if (!(catalog && catalog->incremental())) free_storage(scan.files);
  release_free_heap();

  const auto t = Clock::now();
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
  r.after = summarize_sharing(after->extents, &after->files);
  measure_freed_space(*after, work.extents, work.footprint, work.rewritten, scan.fs.generation, r);
  r.destination_extents_after += count_extents_of(*after, work.destination_files);
  settle_allocated_after(r);
  const auto usage_after = subvolume_usage(*after);
  free_storage(after->extents);
  release_free_heap();
  fill_per_subvolume(scan, usage_before, &usage_after, work.planned, r);
  record_in_catalog(catalog, scan, &*after, r);
}

}  // namespace

void run_filesystem(ScanResult scan, const JobOptions& o, const ScanOptions& scan_options,
                    ProgressSink* progress, CatalogSession* catalog, FilesystemReport& r,
                    const FlatScan* flat) {
  start_report(scan, o, progress, r);
  auto fp = fingerprint_scan(scan, o, progress, catalog, r);
  if (!fp) {
    r.error = fp.error().message();
    return;
  }

  auto t = Clock::now();
  const BatchRoles all_own;
  const BatchRoles& roles = catalog ? catalog->roles() : all_own;
  auto work = match_and_plan(scan, *fp, o, roles, progress, r);
  r.seconds.match = since(t);
  if (catalog)
    if (auto kept = catalog->keep_short_hashes(scan, work.short_hashes); !kept) {
      r.error = kept.error().message();
      return;
    }
  const bool stopped_before_dedupe = o.stop && o.stop->load();
  r.destination_extents_after = r.destination_extents_before;  // unless a dedupe changes them
  if (!o.dedupe || (stopped_before_dedupe && !o.most_valuable_first)) {
    fill_per_subvolume(scan, subvolume_usage(scan), nullptr, work.planned, r);
    record_in_catalog(catalog, scan, nullptr, r);
    return;
  }

  t = Clock::now();
  r.dedupe = dedupe_planned(scan, work, o, progress, r);
  r.seconds.dedupe = since(t);
  if (r.dedupe.calls == 0 && r.rewrite.ranges_rewritten == 0) {  // nothing changed on disk: no confirmation to read
    const auto usage = subvolume_usage(scan);
    fill_per_subvolume(scan, usage, &usage, work.planned, r);
    record_in_catalog(catalog, scan, nullptr, r);
    return;
  }
  r.destination_extents_after = 0;  // counted by the confirmation
  confirm_dedupe(scan, work, scan_options, progress, catalog, flat, r);
}

}  // namespace btrdedupe
