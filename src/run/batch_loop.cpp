#include "src/run/batch_loop.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

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

// What the batches add up to beside the report's own sums.
struct BatchTotals {
  UsageBySubvolume usage_before, usage_after;
  std::map<uint64_t, uint64_t> planned;  // bytes by destination subvolume
  RunPosition where;                     // of the batch under way
  // The first error that did not end the batches (the space freed could not be asked, the
  // groups could not be listed): the run's error unless one ends it.
  std::optional<btrfs::Error> kept_error;
  void keep(const btrfs::Result<void>& ok) {
    if (!ok && !kept_error) kept_error = ok.error();
  }
};

// The run's figures that do not depend on its files, taken before the first batch.
void start_report(const ScanResult& base, FilesystemReport& r) {
  for (const auto& root : base.roots) r.roots.push_back(root.path);
  r.fsid = base.fs.fsid_string();
  r.subvolumes = base.subvolumes.size();
  r.excluded = base.excluded;
}

// What the batch's read counted, before any twin joins it: taken even from a batch that
// kept no file (its files were all passed over or excluded).
void count_read(const ScanResult& batch, FilesystemReport& r) {
  r.files += batch.files.size() + batch.files_without_extents;
  r.extents += batch.extents.size();
  r.passed_over.add(batch.passed_over);
  r.excluded += batch.excluded;
}

// Twins that joined the batch as candidates (an incremental run's catalogued twins) count
// as its own files; twins of other windows are counted in theirs. The reader may reorder
// the files once twins join: candidates are known by their role, not their place.
void count_candidates(const ScanResult& batch, size_t files_read, const PassedOver& passed_read,
                      const BatchRoles& roles, FilesystemReport& r) {
  if (batch.files.size() == files_read) return;  // none joined
  const auto candidate = [&](uint32_t f) { return roles.of(f) == BatchRole::Candidate; };
  uint64_t files = 0;
  for (uint32_t f = 0; f < batch.files.size(); ++f) files += candidate(f);
  if (files == 0) return;
  r.files += files;
  r.extents += std::count_if(batch.extents.begin(), batch.extents.end(),
                             [&](const FileExtent& e) { return candidate(e.file); });
  const PassedOver& now = batch.passed_over;
  PassedOver joined;
  joined.inline_extents = now.inline_extents - passed_read.inline_extents;
  joined.inline_bytes = now.inline_bytes - passed_read.inline_bytes;
  joined.hole_extents = now.hole_extents - passed_read.hole_extents;
  joined.hole_bytes = now.hole_bytes - passed_read.hole_bytes;
  joined.prealloc_extents = now.prealloc_extents - passed_read.prealloc_extents;
  joined.prealloc_bytes = now.prealloc_bytes - passed_read.prealloc_bytes;
  joined.excluded_files = now.excluded_files - passed_read.excluded_files;
  joined.unreadable = now.unreadable - passed_read.unreadable;
  joined.not_ours_files = now.not_ours_files - passed_read.not_ours_files;
  joined.readonly_aliases = now.readonly_aliases - passed_read.readonly_aliases;
  joined.prealloc_bytenrs.assign(now.prealloc_bytenrs.begin() + passed_read.prealloc_bytenrs.size(),
                                 now.prealloc_bytenrs.end());
  r.passed_over.add(joined);
}

btrfs::Result<FingerprintResult> fingerprint_batch(BatchSource& source, ScanResult& batch,
                                                   const RunContext& run, FilesystemReport& r) {
  const size_t files_read = batch.files.size();
  const PassedOver passed_read = batch.passed_over;
  const uint64_t to_read = summarize_sharing(batch.extents, &batch.files).unique_bytes;
  const auto t = Clock::now();
  run.report("fingerprint", 0, to_read);
  auto fp = source.fingerprint(
      batch, [&](uint64_t done) { run.report("fingerprint", std::min(done, to_read), to_read); },
      r);
  r.seconds.fingerprint += since(t);
  if (!fp) return fp;
  r.fingerprints.add(fp->stats);
  count_candidates(batch, files_read, passed_read, source.roles(), r);
  r.tree_items = batch.tree_items;  // the reader's totals so far
  r.tree_searches = batch.search_calls;
  run.report("fingerprint", to_read, to_read);
  return fp;
}

// The files the dedupe changed: its destinations and rewritten remainders.
std::vector<bool> changed_files(const ScanResult& batch, const PlannedWork& work) {
  std::vector<bool> changed(batch.files.size(), false);
  for (const auto& round : work.plan.rounds)
    for (const auto& d : round.destinations) changed[d.file] = true;
  for (const auto& e : work.remainders.extents)
    for (const auto& range : e.ranges) changed[range.file] = true;
  return changed;
}

// Dedupes the batch's plan and confirms what changed: then `sharing` and `usage` are the
// batch's figures after. An error: the confirmation failed (the dedupe stands).
btrfs::Result<void> dedupe_batch(BatchSource& source, ScanResult& batch, PlannedWork work,
                                 const RunContext& run, FilesystemReport& r,
                                 SharingSummary& sharing, UsageBySubvolume& usage,
                                 BatchTotals& totals) {
  auto t = Clock::now();
  const auto stats = dedupe_planned(batch, work, run, r);
  r.dedupe.add(stats);
  r.seconds.dedupe += since(t);
  if (stats.calls == 0 && work.rewritten.ranges_rewritten == 0) {  // the disk is as it was
    r.destination_extents_after += count_extents_of(batch, work.destination_files);
    return {};
  }
  const auto changed = changed_files(batch, work);
  const auto extents = std::move(work.extents);
  const auto rewritten = std::move(work.rewritten);
  const auto files = std::move(work.destination_files);
  const auto footprint = std::move(work.footprint);
  const uint64_t scanned_at = batch.fs.generation;
  work = {};
  t = Clock::now();
  run.report("confirm", 0, 0);
  auto after = source.confirm(batch, changed);
  r.seconds.confirm += since(t);
  if (!after) {
    auto e = after.error();
    e.context = "re-reading the tree after dedupe: " + e.context;
    return e;
  }
  const ScanResult& now = **after;
  sharing = summarize_sharing(now.extents, &now.files, source.roles());
  usage = subvolume_usage(now, source.roles());
  totals.keep(measure_freed_space(now, extents, footprint, rewritten, scanned_at, run.kernel, r));
  r.destination_extents_after += count_extents_of(now, files);
  return {};
}

// The position of the batch after `where`, announced once this one is done.
void announce_next(ProgressSink* progress, const RunPosition& where) {
  if (!progress) return;
  RunPosition coming = where;
  coming.window = where.window + 1;
  coming.windows = std::max(where.windows, coming.window);
  coming.bytes_before += where.window_bytes;
  coming.window_bytes = 0;
  progress->position(coming);
}

// One batch, read: fingerprint, match, plan, dedupe, confirm. An error ends the run's
// batches; what this one did stands.
btrfs::Result<void> run_batch(BatchSource& source, ScanResult& batch, bool more, const RunContext& run,
               FilesystemReport& r, BatchTotals& totals) {
  const JobOptions& o = run.options;
  totals.where = source.position(batch, more,
                                 totals.where.bytes_before + totals.where.window_bytes, r);
  totals.where.dedupe = o.dedupe;
  if (run.progress) run.progress->position(totals.where);
  auto fp = fingerprint_batch(source, batch, run, r);
  if (!fp) return fp.error();
  const BatchRoles& roles = source.roles();  // set by the fingerprint, kept until the next
  auto sharing = summarize_sharing(batch.extents, &batch.files, roles);
  auto usage = subvolume_usage(batch, roles);
  add_sharing(r.before, sharing);
  add_usage(totals.usage_before, usage);

  const auto t = Clock::now();
  auto work = match_and_plan(batch, *fp, run, roles, r);
  r.seconds.match += since(t);
  if (o.list_groups) totals.keep(r.groups.add(std::move(work.listings)));
  if (auto kept = source.keep_short_hashes(batch, work.short_hashes); !kept) return kept;
  for (const auto& [id, bytes] : work.planned) totals.planned[id] += bytes;
  // A time-boxed run stopped before its dedupe still lists its work as left.
  if (o.dedupe && (!run.stopped() || o.most_valuable_first)) {
    if (auto done = dedupe_batch(source, batch, std::move(work), run, r, sharing, usage, totals);
        !done)
      return done;
  } else {
    r.destination_extents_after += count_extents_of(batch, work.destination_files);
  }
  add_sharing(r.after, sharing);
  add_usage(totals.usage_after, usage);
  if (more) announce_next(run.progress, totals.where);
  return {};
}

// Once the batches are done (or one failed): the figures of the whole run, and its record.
void finish_report(BatchSource& source, const ScanResult& last, const BatchTotals& totals,
                   RunKernel& kernel, FilesystemReport& r) {
  r.per_subvolume = subvolume_figures(source.base().subvolumes, totals.usage_before,
                                      r.deduped ? &totals.usage_after : nullptr, totals.planned,
                                      r.dedupe.bytes_by_subvolume,
                                      kernel.subvolumes(r.roots.front()));
  add_freed_by_subvolume(r);
  settle_allocated_after(r);
  if (!r.error.empty()) return;
  if (auto ok = source.record(last, run_record(r)); !ok) r.error = ok.error().message();
}

// Every batch of the source in turn, `batch` left holding the last; the first error ends
// them. The first batch runs whatever a stop says: a stopped run still reports what it found.
btrfs::Result<void> run_each(BatchSource& source, const RunContext& run, FilesystemReport& r,
                             BatchTotals& totals, ScanResult& batch) {
  auto started = source.start(r);
  if (!started) return started.error();
  for (bool first = true, more = *started; more && (first || !run.stopped()); first = false) {
    batch = empty_batch(source.base());
    const auto t = Clock::now();
    run.report("scan", 0, 0);
    auto next = source.next(batch);
    r.seconds.scan += since(t);
    if (!next) return next.error();
    more = *next;
    count_read(batch, r);
    if (batch.files.empty() && !(first && !more)) continue;  // an empty one among others
    if (auto done = run_batch(source, batch, more, run, r, totals); !done) return done;
  }
  return {};
}

}  // namespace

void run_batches(BatchSource& source, const RunContext& run, FilesystemReport& r) {
  start_report(source.base(), r);
  BatchTotals totals;
  ScanResult batch = empty_batch(source.base());
  if (auto done = run_each(source, run, r, totals, batch); !done)
    r.error = done.error().message();
  else if (totals.kept_error)
    r.error = totals.kept_error->message();
  finish_report(source, batch, totals, run.kernel, r);
}

}  // namespace btrdedupe
