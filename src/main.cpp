// btrdedupe: the program around the engine.
#include <chrono>
#include <cstdio>
#include <string>

#include "src/byte_size.h"
#include "src/cli_options.h"
#include "src/dedupe_engine.h"
#include "src/dedupe_plan.h"
#include "src/duplicate_match.h"
#include "src/fingerprint.h"
#include "src/scanned_file.h"
#include "src/tree_scan.h"

namespace btrdedupe {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

class Report {
 public:
  explicit Report(const CliOptions& o) : o_(o) {}

  std::string size(uint64_t bytes) const {
    return o_.human ? human_bytes(bytes) : std::to_string(bytes);
  }

  void scan(const ScanResult& scan, double secs) const {
    if (o_.quiet) return;
    const auto sharing = summarize_sharing(scan.extents);
    const auto& p = scan.passed_over;
    std::printf("Scanned %s: %zu subvolume(s), %zu files, %zu extents "
                "(%llu tree items in %llu searches, %.2f s)\n",
                scan.root.c_str(), scan.subvolumes.size(), scan.files.size(), scan.extents.size(),
                ull(scan.tree_items), ull(scan.search_calls), secs);
    std::printf("  data in regular extents: %s logical, %s distinct on disk in %llu extents\n",
                size(sharing.logical_bytes).c_str(), size(sharing.unique_bytes).c_str(),
                ull(sharing.physical_extents));
    std::printf("  already shared (reflinks, snapshots; never read again): %s\n",
                size(sharing.shared_bytes).c_str());
    std::printf("  passed over: %llu inline extents (%s), %llu holes (%s), %llu prealloc (%s), "
                "%llu small files\n",
                ull(p.inline_extents), size(p.inline_bytes).c_str(), ull(p.hole_extents),
                size(p.hole_bytes).c_str(), ull(p.prealloc_extents), size(p.prealloc_bytes).c_str(),
                ull(p.excluded_files));
  }

  void fingerprints(const FingerprintStats& st, double secs) const {
    if (!o_.quiet)
      std::printf("Fingerprinted %llu extents from the csum tree (%s, no data read) and %llu by "
                  "reading them (%s read) in %.2f s\n",
                  ull(st.extents_from_csums), size(st.bytes_from_csums).c_str(),
                  ull(st.extents_read), size(st.bytes_read).c_str(), secs);
    for (const auto& e : st.errors) std::fprintf(stderr, "btrdedupe: %s\n", e.c_str());
  }

  void matches(const ScanResult& scan, const MatchResult& m, const DedupePlan& plan) const {
    if (o_.quiet) return;
    std::printf("Found %llu whole-file and %llu partial duplicate groups: %s to dedupe",
                ull(m.whole_file_groups), ull(m.partial_groups), size(plan.planned_bytes).c_str());
    if (plan.readonly_members_skipped)
      std::printf(" (%llu ranges in read-only snapshots left as they are)",
                  ull(plan.readonly_members_skipped));
    std::printf("\n");
    if (o_.dedupe) return;
    for (const auto& g : m.groups) {
      std::printf("%s %s, %zu ranges:\n", size(g.length).c_str(),
                  g.whole_file ? "whole files" : "range", g.members.size());
      for (const auto& mem : g.members)
        std::printf("  %s\t%llu\t[layout %u]\n", file_path(scan, scan.files[mem.file]).c_str(),
                    ull(mem.offset), mem.layout);
    }
  }

  void dedupe(const DedupeStats& st, double secs) const {
    if (!o_.quiet)
      std::printf("Deduped %s in %llu calls (%.2f s): %llu ranges shared, %llu differed, "
                  "%llu changed since the scan, %llu refused\n",
                  size(st.bytes_deduped).c_str(), ull(st.calls), secs, ull(st.ranges_same),
                  ull(st.ranges_differ), ull(st.ranges_changed), ull(st.ranges_failed));
    for (const auto& m : st.messages) std::fprintf(stderr, "btrdedupe: %s\n", m.c_str());
  }

 private:
  const CliOptions& o_;
};

int run_root(const std::string& root, const CliOptions& o, const Report& report) {
  ScanOptions scan_options;
  scan_options.recursive = o.recursive;
  scan_options.min_file_size = o.min_size;
  auto t = Clock::now();
  auto scan = scan_tree(root, scan_options);
  if (!scan) {
    std::fprintf(stderr, "btrdedupe: %s\n", scan.error().message().c_str());
    return kExitError;
  }
  report.scan(*scan, seconds_since(t));

  t = Clock::now();
  auto fp = fingerprint(*scan);
  if (!fp) {
    std::fprintf(stderr, "btrdedupe: %s\n", fp.error().message().c_str());
    return kExitError;
  }
  report.fingerprints(fp->stats, seconds_since(t));

  MatchOptions match_options;
  match_options.block_size = o.block_size;
  const auto matches = find_duplicates(*scan, *fp, match_options);
  const auto plan = plan_rounds(*scan, matches, {});
  report.matches(*scan, matches, plan);
  if (!o.dedupe) return fp->stats.read_errors ? kExitError : kExitOk;

  DedupeOptions dedupe_options;
  if (o.io_threads) dedupe_options.io_threads = o.io_threads;
  t = Clock::now();
  const auto stats = run_dedupe(*scan, plan, dedupe_options);
  report.dedupe(stats, seconds_since(t));

  // Confirm from the tree: what shares storage now, not what the calls claimed.
  const auto before = summarize_sharing(scan->extents);
  auto after_scan = scan_tree(root, scan_options);
  if (!after_scan) {
    std::fprintf(stderr, "btrdedupe: re-scan after dedupe: %s\n",
                 after_scan.error().message().c_str());
    return kExitError;
  }
  const auto after = summarize_sharing(after_scan->extents);
  const int64_t net = static_cast<int64_t>(after.shared_bytes) - static_cast<int64_t>(before.shared_bytes);
  if (!o.quiet)
    std::printf("Data on disk for these files: %s before, %s after\n",
                report.size(before.unique_bytes).c_str(), report.size(after.unique_bytes).c_str());
  // Machine-read by scripts written for duperemove: same words, raw bytes.
  std::printf("Comparison of extent info shows a net change in shared extents of: %lld\n",
              static_cast<long long>(net));
  return (stats.ranges_failed || fp->stats.read_errors) ? kExitError : kExitOk;
}

}  // namespace
}  // namespace btrdedupe

int main(int argc, char** argv) {
  using namespace btrdedupe;
  const auto parsed = parse_cli(argc, argv);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "btrdedupe: %s\n", parsed.error.c_str());
    return kExitUsage;
  }
  if (parsed.options.show_help) {
    std::fputs(cli_help().c_str(), stdout);
    return kExitOk;
  }
  if (parsed.options.show_version) {
    std::puts("btrdedupe " BTRDEDUPE_VERSION);
    return kExitOk;
  }
  const Report report(parsed.options);
  int status = kExitOk;
  for (const auto& root : parsed.options.paths) {
    const int s = run_root(root, parsed.options, report);
    if (s != kExitOk) status = s;
  }
  return status;
}
