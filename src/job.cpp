#include "src/job.h"

#include <chrono>
#include <map>

#include "src/dedupe_plan.h"
#include "src/duplicate_match.h"
#include "src/scanned_file.h"

namespace btrdedupe {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void report_progress(ProgressSink* sink, const char* phase, uint64_t done, uint64_t total) {
  if (sink) sink->progress(phase, done, total);
}

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

std::vector<GroupListing> list_groups(const ScanResult& scan, const MatchResult& m) {
  std::vector<GroupListing> out;
  for (const auto& g : m.groups) {
    GroupListing l;
    l.length = g.length;
    l.whole_file = g.whole_file;
    for (const auto& mem : g.members)
      l.members.push_back({file_path(scan, scan.files[mem.file]), mem.offset, mem.layout});
    out.push_back(std::move(l));
  }
  return out;
}

void run_filesystem(ScanResult scan, const JobOptions& o, const ScanOptions& scan_options,
                    ProgressSink* progress, FilesystemReport& r) {
  for (const auto& root : scan.roots) r.roots.push_back(root.path);
  r.fsid = scan.fs.fsid_string();
  r.subvolumes = scan.subvolumes.size();
  r.files = scan.files.size();
  r.extents = scan.extents.size();
  r.tree_items = scan.tree_items;
  r.tree_searches = scan.search_calls;
  r.passed_over = scan.passed_over;
  r.before = r.after = summarize_sharing(scan.extents);

  auto t = Clock::now();
  report_progress(progress, "fingerprint", 0, r.before.unique_bytes);
  auto fp = fingerprint(scan);
  r.seconds.fingerprint = since(t);
  if (!fp) {
    r.error = fp.error().message();
    return;
  }
  r.fingerprints = fp->stats;
  report_progress(progress, "fingerprint", r.before.unique_bytes, r.before.unique_bytes);

  t = Clock::now();
  MatchOptions mo;
  mo.block_size = o.block_size;
  mo.partial = o.partial;
  const auto matches = find_duplicates(scan, *fp, mo);
  fp->files.clear();  // the sums are no longer needed: free them before dedupe
  fp->files.shrink_to_fit();
  PlanOptions po;
  po.dedupe_readonly = o.dedupe_readonly;
  const auto plan = plan_rounds(scan, matches, po);
  r.seconds.match = since(t);
  r.whole_file_groups = matches.whole_file_groups;
  r.partial_groups = matches.partial_groups;
  r.planned_bytes = plan.planned_bytes;
  r.planned_rounds = plan.rounds.size();
  r.readonly_ranges_left = plan.readonly_members_skipped;
  if (o.list_groups) r.groups = list_groups(scan, matches);
  if (!o.dedupe) return;

  t = Clock::now();
  DedupeOptions dopt;
  dopt.io_threads = o.io_threads;
  dopt.prefetch = o.prefetch;
  if (progress)
    dopt.on_progress = [&](uint64_t done) { progress->progress("dedupe", done, plan.planned_bytes); };
  r.dedupe = run_dedupe(scan, plan, dopt);
  r.deduped = true;
  r.seconds.dedupe = since(t);

  // Confirm from the tree: what shares storage now, not what the calls reported.
  t = Clock::now();
  std::vector<std::string> roots = r.roots;
  auto after = scan_roots(roots, scan_options);
  r.seconds.confirm = since(t);
  if (!after) {
    r.error = "re-reading the tree after dedupe: " + after.error().message();
    return;
  }
  r.after = summarize_sharing(after->extents);
}

}  // namespace

int JobReport::exit_code() const {
  if (!path_errors.empty()) return 1;
  for (const auto& fs : filesystems)
    if (!fs.error.empty() || fs.fingerprints.read_errors || fs.dedupe.ranges_failed) return 1;
  return 0;
}

int64_t JobReport::net_shared_change() const {
  int64_t net = 0;
  for (const auto& fs : filesystems)
    net += static_cast<int64_t>(fs.after.shared_bytes) - static_cast<int64_t>(fs.before.shared_bytes);
  return net;
}

JobReport run_job(const JobOptions& o, ProgressSink* progress) {
  JobReport report;
  ScanOptions scan_options;
  scan_options.recursive = o.recursive;
  scan_options.min_file_size = o.min_file_size;
  scan_options.fold_readonly_aliases = !o.dedupe_readonly;

  // Scan each path; paths of one filesystem are deduped together, in the order given.
  std::vector<std::string> fs_order;
  std::map<std::string, std::vector<ScanResult>> by_fs;
  std::map<std::string, double> scan_seconds;
  for (const auto& path : o.paths) {
    const auto t = Clock::now();
    report_progress(progress, "scan", 0, 0);
    auto scan = scan_tree(path, scan_options);
    if (!scan) {
      report.path_errors.push_back(scan.error().message());
      continue;
    }
    const std::string fsid = scan->fs.fsid_string();
    if (!by_fs.count(fsid)) fs_order.push_back(fsid);
    by_fs[fsid].push_back(std::move(*scan));
    scan_seconds[fsid] += since(t);
  }
  for (const auto& fsid : fs_order) {
    FilesystemReport r;
    r.seconds.scan = scan_seconds[fsid];
    auto merged = merge_scans(std::move(by_fs[fsid]));
    if (!merged) {
      r.error = merged.error().message();
    } else {
      run_filesystem(std::move(*merged), o, scan_options, progress, r);
    }
    report.filesystems.push_back(std::move(r));
  }
  return report;
}

}  // namespace btrdedupe
