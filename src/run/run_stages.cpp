#include "src/run/run_stages.h"

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "src/match/duplicate_match.h"
#include "src/read/file_extent_index.h"
#include "src/plan/freeing_runs.h"
#include "src/run/heap_release.h"
#include "src/read/scanned_file.h"
#include "src/fingerprint/short_file_proof.h"
#include "src/report/subvolume_report.h"

namespace btrdedupe {
namespace {

// Threads proving short files when --io-threads is not given (match_and_plan).
constexpr unsigned kProofReaders = 16;

std::vector<GroupListing> list_groups(const ScanResult& scan, const MatchResult& m,
                                      const DedupePlan& plan) {
  std::vector<GroupListing> out;
  for (const auto& g : m.groups) {
    GroupListing l;
    l.length = g.length;
    l.whole_file = g.whole_file;
    for (const auto& mem : g.members)
      l.members.push_back({file_path(scan, scan.files[mem.file]), mem.offset, mem.layout});
    out.push_back(std::move(l));
  }
  // Roles from the plan: a group's rounds share its source and destinations.
  for (const auto& round : plan.rounds) {
    if (round.group >= out.size()) continue;
    const auto& g = m.groups[round.group];
    auto& members = out[round.group].members;
    for (size_t i = 0; i < g.members.size(); ++i) {
      if (g.members[i].file == round.source.file) members[i].source = true;
      for (const auto& d : round.destinations)
        if (g.members[i].file == d.file) members[i].destination = true;
    }
  }
  return out;
}

// After the rounds: the remainders, unless a stop came or the filesystem is full.
RewriteStats rewrite_planned(const ScanResult& scan, const RemainderPlan& remainders,
                             const DedupeStats& rounds, const RunContext& run,
                             bool before_rounds) {
  RewriteStats none;
  if (remainders.extents.empty() || rounds.stopped) return none;
  if (rounds.no_space) {
    for (const auto& e : remainders.extents) none.ranges_fell_back += e.ranges.size();
    none.fallback_reason = "the filesystem is full (ENOSPC in the dedupe rounds)";
    return none;
  }
  RewriteOptions ropt;
  ropt.stop = run.options.stop;
  ropt.before_rounds = before_rounds;
  ropt.kernel = &run.kernel.rewrite();
  run.report("rewrite", 0, remainders.bytes);
  if (run.progress)
    ropt.on_progress = [&](uint64_t done) { run.report("rewrite", done, remainders.bytes); };
  return rewrite_remainders(scan, remainders, ropt);
}

std::vector<std::pair<uint64_t, uint64_t>> destination_files(const ScanResult& scan,
                                                             const PlannedWork& work) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const auto add = [&](uint32_t f) { out.emplace_back(scan.files[f].subvolume, scan.files[f].inode); };
  for (const auto& round : work.plan.rounds)
    for (const auto& d : round.destinations) add(d.file);
  for (const auto& e : work.remainders.extents)
    for (const auto& range : e.ranges) add(range.file);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::vector<bool> drop_groups_of_earlier_windows(const BatchRoles& roles, MatchResult& matches) {
  const auto earlier = [&](const GroupMember& m) { return roles.counted_before(m.file); };
  std::erase_if(matches.groups, [&](const DuplicateGroup& g) {
    return std::all_of(g.members.begin(), g.members.end(), earlier);
  });
  matches.whole_file_groups = matches.partial_groups = 0;
  std::vector<bool> grown(matches.groups.size());
  for (size_t i = 0; i < matches.groups.size(); ++i) {
    const auto& g = matches.groups[i];
    grown[i] = std::count_if(g.members.begin(), g.members.end(), earlier) > 1 ||
               std::any_of(g.members.begin(), g.members.end(), [&](const GroupMember& m) {
                 return roles.grouped_before(m.file);
               });
    if (!grown[i]) ++(g.whole_file ? matches.whole_file_groups : matches.partial_groups);
  }
  return grown;
}

uint64_t count_extents_of(const ScanResult& scan,
                          const std::vector<std::pair<uint64_t, uint64_t>>& files) {
  if (files.empty()) return 0;
  std::vector<bool> counted(scan.files.size());
  for (size_t i = 0; i < scan.files.size(); ++i)
    counted[i] = std::binary_search(files.begin(), files.end(),
                                    std::make_pair(scan.files[i].subvolume, scan.files[i].inode));
  uint64_t n = 0;
  for (const auto& e : scan.extents) n += counted[e.file] ? 1 : 0;
  return n;
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void report_progress(ProgressSink* sink, const char* phase, uint64_t done, uint64_t total) {
  if (sink) sink->progress(phase, done, total);
}

namespace {

// The plan made per physical extent: short runs where they let one go, the remainders to
// rewrite, and what that frees.
void plan_whole_extents(const ScanResult& scan, const FingerprintResult& fp, const JobOptions& o,
                        MatchResult& matches, PlannedWork& work, FilesystemReport& r) {
  work.extents = destination_extents(scan, work.plan);
  if (o.partial) {
    FreeingRunRules rules;
    rules.untouched_below = o.block_size;
    const auto runs = add_freeing_runs(scan, fp, work.extents, rules, o.most_valuable_first,
                                       matches, work.plan);
    r.freeing_runs.add(runs);
    if (runs.groups) work.extents = destination_extents(scan, work.plan);
  }
  if (o.dedupe) work.footprint = PlanFootprint(scan, work.plan);
  if (o.rewrite_remainders) {
    RemainderRules rules;  // the budget is the filesystem's: earlier windows used some
    rules.budget_bytes = o.rewrite_budget - std::min(o.rewrite_budget, r.rewrite.planned_bytes);
    work.remainders = plan_remainders(scan, work.plan, work.extents, rules);
    r.rewrite.planned_extents += work.remainders.extents.size();
    r.rewrite.planned_bytes += work.remainders.bytes;
    r.rewrite.skipped_for_budget += work.remainders.skipped_for_budget;
    r.rewrite.bytes_skipped_for_budget += work.remainders.bytes_skipped_for_budget;
  }
  r.would_free.add(predicted_freed(work.extents));
}

}  // namespace

PlannedWork match_and_plan(const ScanResult& scan, FingerprintResult& fp, const RunContext& run,
                           const BatchRoles& roles, FilesystemReport& r) {
  const JobOptions& o = run.options;
  run.report("match", 0, 0);
  MatchOptions mo;
  mo.block_size = o.block_size;
  mo.partial = o.partial;
  auto matches = find_duplicates(scan, fp, mo);
  // A proof read is one small file: a path walk and one sector, waiting on latency, not
  // bandwidth, so more readers than data readers, on rotational storage too (its elevator
  // orders a deeper queue). Unless --io-threads says otherwise, kProofReaders (dataset P,
  // cold, -r: 1.62 s with 2, 0.92 s with 8, 0.85 s with 16; 4 copies of linux-source in
  // windows on a loop device that says it is rotational: 2.68 s with 8, 2.07 s with 16,
  // 1.97 s with 32).
  const unsigned readers = o.io_threads ? o.io_threads : kProofReaders;
  auto proof = prove_short_files(scan, fp, matches, readers);
  r.short_file_proofs.add(proof.counts);
  std::vector<bool> grown;
  if (roles.in_windows()) grown = drop_groups_of_earlier_windows(roles, matches);
  PlanOptions po;
  po.dedupe_readonly = o.dedupe_readonly;
  po.roles = &roles;
  po.most_valuable_first = o.most_valuable_first;
  PlannedWork work;
  work.short_hashes = std::move(proof.hashes_read);
  work.plan = plan_rounds(scan, matches, po);
  work.planned = planned_bytes_by_subvolume(scan, work.plan);
  plan_whole_extents(scan, fp, o, matches, work, r);
  fp.files = FileSumsTable();  // the sums are no longer needed: free them before dedupe
  work.destination_files = destination_files(scan, work);
  r.destination_extents_before += count_extents_of(scan, work.destination_files);
  r.whole_file_groups += matches.whole_file_groups;
  r.partial_groups += matches.partial_groups;
  r.planned_bytes += work.plan.planned_bytes;
  // In a report, a grown group's rounds share the source an earlier window's rounds did: a
  // dedupe run takes these copies in that window's rounds (its first pass gives it them as
  // ahead twins). In a dedupe run, each of its rounds is a call.
  r.planned_rounds += std::count_if(work.plan.rounds.begin(), work.plan.rounds.end(),
                                    [&](const DedupeRound& round) {
                                      return o.dedupe || round.group >= grown.size() ||
                                             !grown[round.group];
                                    });
  r.readonly_ranges_left += work.plan.readonly_members_skipped;
  if (o.list_groups) work.listings = list_groups(scan, matches, work.plan);
  matches.groups.clear();  // the plan holds what dedupe needs
  matches.groups.shrink_to_fit();
  release_free_heap();
  return work;
}

DedupeStats dedupe_planned(const ScanResult& scan, PlannedWork& work, const RunContext& run,
                           FilesystemReport& r) {
  const JobOptions& o = run.options;
  const DedupePlan& plan = work.plan;
  DedupeOptions dopt;
  dopt.io_threads = o.io_threads ? o.io_threads : run.kernel.io_threads(r.roots.front());
  r.io_threads = dopt.io_threads;
  dopt.prefetch = o.prefetch;
  dopt.stop = o.stop;
  dopt.kernel = &run.kernel.dedupe();
  dopt.pace = o.pace;
  run.report("dedupe", 0, plan.planned_bytes);
  if (run.progress)
    dopt.on_progress = [&](uint64_t done) { run.report("dedupe", done, plan.planned_bytes); };
  dopt.scan_started = r.started_at;
  std::vector<uint8_t> started;
  if (o.most_valuable_first) dopt.round_started = &started;
  // Remainders that rounds read from first (RemainderExtent::before_rounds).
  work.rewritten = rewrite_planned(scan, work.remainders, {}, run, true);
  auto stats = run_dedupe(scan, plan, dopt);
  r.deduped = true;
  if (o.most_valuable_first) r.work.add(list_work(scan, plan, started));
  work.rewritten.add(rewrite_planned(scan, work.remainders, stats, run, false));
  r.rewrite.add(work.rewritten);
  return stats;
}

btrfs::Result<void> measure_freed_space(const ScanResult& scan,
                                        const std::vector<PhysicalExtent>& extents,
                                        const PlanFootprint& footprint,
                                        const RewriteStats& rewritten, uint64_t scanned_at,
                                        RunKernel& kernel, FilesystemReport& r) {
  auto allocated = kernel.still_allocated(scan, extents, scanned_at);
  if (!allocated) {
    auto e = allocated.error();
    e.context = "reading the extent tree after dedupe: " + e.context;
    return e;
  }
  r.freed.add(freed_of(extents, *allocated, rewritten.allocated_by_subvolume));
  r.plan_check.add(check_plan(extents, *allocated, footprint, scan));
  return {};
}

void settle_allocated_after(FilesystemReport& r) {
  r.after.allocated_bytes = r.before.allocated_bytes - std::min(r.freed.bytes, r.before.allocated_bytes);
}

void add_freed_by_subvolume(FilesystemReport& r) {
  for (auto& s : r.per_subvolume) {
    const auto f = r.freed.by_subvolume.find(s.id);
    const auto w = r.would_free.by_subvolume.find(s.id);
    if (f != r.freed.by_subvolume.end()) s.freed_bytes = f->second;
    if (w != r.would_free.by_subvolume.end()) s.would_free_bytes = w->second;
  }
}

RunRecord run_record(const FilesystemReport& r) {
  RunRecord run;
  run.started = r.started;
  run.finished = static_cast<int64_t>(std::time(nullptr));
  for (const auto& root : r.roots) run.roots += (run.roots.empty() ? "" : "\n") + root;
  run.files = r.files;
  run.bytes_read = r.fingerprints.bytes_read;
  run.bytes_deduped = r.dedupe.bytes_deduped;
  const auto eagain = r.dedupe.errors_by_code.find(EAGAIN);
  run.complete = r.deduped && !r.dedupe.stopped && !r.dedupe.no_space &&
                 r.dedupe.ranges_not_tried == 0 &&
                 (eagain == r.dedupe.errors_by_code.end() || eagain->second == 0);
  return run;
}

}  // namespace btrdedupe
