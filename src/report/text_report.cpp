#include "src/report/text_report.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "src/report/byte_size.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/read/reader_kind.h"
#include "src/report/reader_words.h"
#include "src/report/text_summary.h"

namespace btrdedupe {
namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

class Printer {
 public:
  Printer(const TextReportOptions& o, const ReaderWords& words, std::FILE* out, std::FILE* err)
      : o_(o), words_(words), out_(out), err_(err) {}

  std::string size(uint64_t bytes) const {
    return size_text(bytes, o_.human);
  }

  void filesystem(const FilesystemReport& r, const JobOptions& job,
                  uint64_t estimated_files) const {
    if (r.catalog.unchanged) {
      if (!o_.quiet)
        std::fprintf(out_, "Nothing changed since the last run recorded in %s: no tree read, "
                     "nothing to do\n", printable_path(job.hashfile).c_str());
      return;
    }
    if (!o_.quiet) scan_figures(r, job, estimated_files);
    if (!r.error.empty() && r.fsid.empty()) {
      std::fprintf(err_, "btrdedupe: %s\n", r.error.c_str());
      return;
    }
    fingerprint_figures(r);
    if (!r.error.empty()) {
      std::fprintf(err_, "btrdedupe: %s\n", r.error.c_str());
      if (!r.deduped) return;
    }
    if (!o_.quiet) duplicate_figures(r, job);
    if (!r.deduped) {
      subvolumes(r, job);
      return;
    }
    if (!o_.quiet) dedupe_figures(r);
    for (const auto& m : r.dedupe.messages) std::fprintf(err_, "btrdedupe: %s\n", m.c_str());
    subvolumes(r, job);
  }

  void scan_figures(const FilesystemReport& r, const JobOptions& job,
                    uint64_t estimated_files) const {
    std::string roots;
    constexpr size_t kRootsShown = 4;  // --all-subvols: one root per subvolume
    for (size_t i = 0; i < r.roots.size() && i < kRootsShown; ++i)
      roots += (roots.empty() ? "" : ", ") + printable_path(r.roots[i]);
    if (r.roots.size() > kRootsShown)
      roots += " and " + std::to_string(r.roots.size() - kRootsShown) + " more";
    if (words_.tree_counts)
      std::fprintf(out_, "Scanned %s: %llu subvolume(s), %llu files, %llu extents "
                   "(%llu tree items in %llu searches, %.2f s)\n",
                   roots.c_str(), ull(r.subvolumes), ull(r.files), ull(r.extents),
                   ull(r.tree_items), ull(r.tree_searches), r.seconds.scan);
    else
      std::fprintf(out_, "Scanned %s: %llu subvolume(s), %llu files, %llu extents (walked, "
                   "mapped with FIEMAP, %.2f s)\n", roots.c_str(), ull(r.subvolumes),
                   ull(r.files), ull(r.extents), r.seconds.scan);
    if (r.windows) {
      std::string why = " (more files than a whole run holds)";
      if (job.window_files)
        why = " (-B)";
      else if (estimated_files)
        why = " (about " + std::to_string(estimated_files) +
              " files by their inode numbers, more than a whole run holds)";
      std::fprintf(out_, "  read, matched and deduped in %llu windows of %llu files%s\n",
                   ull(r.windows), ull(r.window_files), why.c_str());
    }
    std::fprintf(out_, "  data in regular extents: %s logical, %s distinct, %s %s in %llu extents\n",
                 size(r.before.logical_bytes).c_str(), size(r.before.unique_bytes).c_str(),
                 size(r.before.allocated_bytes).c_str(), words_.on_disk,
                 ull(r.before.physical_extents));
    std::fprintf(out_, "  already shared (reflinks, snapshots; fingerprinted once): %s\n",
                 size(r.before.shared_bytes).c_str());
    const auto& p = r.passed_over;
    std::fprintf(out_, "  passed over: %llu inline extents (%s), %llu holes (%s), "
                 "%llu prealloc (%s), %llu small files, %llu read-only snapshot copies\n",
                 ull(p.inline_extents), size(p.inline_bytes).c_str(), ull(p.hole_extents),
                 size(p.hole_bytes).c_str(), ull(p.prealloc_extents),
                 size(p.prealloc_bytes).c_str(), ull(p.excluded_files),
                 ull(p.readonly_aliases));
    if (r.excluded)
      std::fprintf(out_, "  excluded by --exclude: %llu files and subvolumes\n", ull(r.excluded));
    if (p.unreadable || p.not_ours_files)
      std::fprintf(out_, "  not yours: %llu files and directories you may not read (passed "
                   "over), %llu files you may not write (sources only, never deduped into)\n",
                   ull(p.unreadable), ull(p.not_ours_files));
  }

  // Fingerprints and what the hashfile saved; errors reading data go to err_ even with -q.
  void fingerprint_figures(const FilesystemReport& r) const {
    const auto& f = r.fingerprints;
    if (!o_.quiet)
      std::fprintf(out_, "Fingerprinted %llu extents from the csum tree (%s, no data read) and "
                   "%llu by reading them (%s read) in %.2f s%s\n",
                   ull(f.extents_from_csums), size(f.bytes_from_csums).c_str(),
                   ull(f.extents_read), size(f.bytes_read).c_str(), r.seconds.fingerprint,
                   r.windows ? " (with the twins each window read back from other windows)" : "");
    if (!o_.quiet && f.extents_from_twins)
      std::fprintf(out_, "  %llu compressed extents (%s) took the sums of a twin holding the same "
                   "compressed bytes: not read\n",
                   ull(f.extents_from_twins), size(f.bytes_from_twins).c_str());
    std::string read_for;
    for (const auto& [bytes, why] : f.read_for.reasons())
      if (bytes) read_for += (read_for.empty() ? "" : ", ") + size(bytes) + " " + why;
    if (!o_.quiet && !read_for.empty()) std::fprintf(out_, "  read for: %s\n", read_for.c_str());
    if (r.catalog.upgraded_from)
      std::fprintf(out_, "Hashfile upgraded from format %d to %d: %s\n", *r.catalog.upgraded_from,
                   kCatalogFormat,
                   upgrade_rewrites_rows(*r.catalog.upgraded_from)
                       ? "its file rows were written afresh by this run, which read the trees "
                         "whole as a first run does"
                       : "in place, its rows and generations kept");
    if (!o_.quiet && r.catalog.used && r.windows)
      std::fprintf(out_, "Hashfile: rows written afresh for %llu files, read in windows; %llu "
                   "files of earlier windows read back as possible twins\n",
                   ull(r.catalog.files_changed), ull(r.catalog.candidates));
    else if (!o_.quiet && r.catalog.used)
      std::fprintf(out_, "Hashfile: %llu files new or changed since the last run, %llu unchanged "
                   "(not fingerprinted again), %llu unchanged ones checked as possible twins\n",
                   ull(r.catalog.files_changed), ull(r.catalog.files_known),
                   ull(r.catalog.candidates));
    if (!o_.quiet && r.catalog.incremental)
      std::fprintf(out_, "Incremental run: only tree leaves written since the last run were "
                   "read; %llu rows of files gone removed; the figures cover the changed files "
                   "and their twins only\n",
                   ull(r.catalog.stale_rows));
    for (const auto& e : f.errors) std::fprintf(err_, "btrdedupe: %s\n", e.c_str());
  }

  void duplicate_figures(const FilesystemReport& r, const JobOptions& job) const {
    std::fprintf(out_, "Found %llu whole-file and %llu partial duplicate groups: %s to dedupe",
                 ull(r.whole_file_groups), ull(r.partial_groups), size(r.planned_bytes).c_str());
    if (r.readonly_ranges_left)
      std::fprintf(out_, " (%llu ranges in read-only snapshots left as they are)",
                   ull(r.readonly_ranges_left));
    std::fprintf(out_, " (%.2f s)\n", r.seconds.match);
    // Grepped for by scripts written for duperemove: its words, its count (groups).
    std::fprintf(out_, "Simple read and compare of file data found %llu instances of extents "
                 "that might benefit from deduplication.\n",
                 ull(r.whole_file_groups + r.partial_groups));
    std::fprintf(out_, "  %s free %s of disk space: %llu extents left with no reference in "
                 "the scan (files outside it may still hold some)\n",
                 r.deduped ? "planned to" : "-d would", size(r.would_free.bytes).c_str(),
                 ull(r.would_free.extents));
    if (r.freeing_runs.groups)
      std::fprintf(out_, "  of the groups, %llu are short runs (%s) added because they let %llu "
                   "extents go whole\n",
                   ull(r.freeing_runs.groups), size(r.freeing_runs.bytes).c_str(),
                   ull(r.freeing_runs.extents));
    planned_rewrites(r.rewrite);
    if (o_.dry_run)
      std::fprintf(out_, "Dry run: -d would dedupe %s in %llu rounds; nothing was changed\n",
                   size(r.planned_bytes).c_str(), ull(r.planned_rounds));
    if (o_.list_groups) groups(r);
    if (o_.debug)
      std::fprintf(out_, "  debug: fsid %s, %llu csum tree searches, %llu rounds planned, "
                   "block size %llu, partial %s, %u io threads\n",
                   r.fsid.c_str(), ull(r.fingerprints.csum_searches), ull(r.planned_rounds),
                   ull(job.block_size), job.partial ? "on" : "off", job.io_threads);
  }

  void dedupe_figures(const FilesystemReport& r) const {
    const auto& d = r.dedupe;
    std::fprintf(out_, "Deduped %s in %llu calls (%.2f s, %u threads): %llu ranges shared, "
                 "%llu differed, %llu changed since the scan, %llu refused%s\n",
                 size(d.bytes_deduped).c_str(), ull(d.calls), r.seconds.dedupe, r.io_threads,
                 ull(d.ranges_same), ull(d.ranges_differ), ull(d.ranges_changed),
                 ull(d.ranges_failed), d.stopped ? " (stopped early)" : "");
    if (d.ranges_unequal)
      std::fprintf(out_, "  %llu ranges of unchanged files were not equal throughout (their sums "
                   "agreed, their bytes did not): narrowed to their equal parts, %s shared\n",
                   ull(d.ranges_unequal), size(d.bytes_narrowed).c_str());
    rewrites(r.rewrite);
    std::fprintf(out_, "Disk space of these files' extents: %s before, %s after: %s freed in "
                 "%llu extents (%s; confirmed %s in %.2f s)\n",
                 size(r.before.allocated_bytes).c_str(), size(r.after.allocated_bytes).c_str(),
                 size(r.freed.bytes).c_str(), ull(r.freed.extents), words_.freed_as,
                 words_.confirmed, r.seconds.confirm);
    plan_against_disk(r.plan_check);
    if (r.destination_extents_before)
      std::fprintf(out_, "  the files deduped into had %llu extents before, %llu after\n",
                   ull(r.destination_extents_before), ull(r.destination_extents_after));
    if (o_.debug) {
      std::fprintf(out_, "  debug: %s prefetched", size(d.bytes_prefetched).c_str());
      for (const auto& [code, n] : d.errors_by_code)
        std::fprintf(out_, ", errno %d (%s): %llu ranges", code, std::strerror(code), ull(n));
      std::fprintf(out_, "\n");
    }
  }

  // The plan's extents looked up again: a gap between plan and disk, with its reasons.
  void plan_against_disk(const PlanCheck& c) const {
    if (!c.planned.extents) return;
    std::fprintf(out_, "  plan against disk: %llu of %llu planned extents freed (%s of %s)",
                 ull(c.freed.extents), ull(c.planned.extents), size(c.freed.bytes).c_str(),
                 size(c.planned.bytes).c_str());
    const std::pair<const char*, const ExtentTally*> kept[] = {
        {"a round's source lay on them", &c.used_as_source},
        {"a destination range was not deduped", &c.not_deduped},
        {"a remainder was not rewritten", &c.remainder_kept},
        {"held by files outside the scan", &c.outside_scan}};
    const char* sep = "; still allocated: ";
    for (const auto& [why, t] : kept)
      if (t->extents) {
        std::fprintf(out_, "%s%llu (%s) %s", sep, ull(t->extents), size(t->bytes).c_str(), why);
        sep = ", ";
      }
    std::fprintf(out_, "\n");
  }

  void planned_rewrites(const RewriteStats& w) const {
    if (w.planned_extents)
      std::fprintf(out_, "  of which %llu extents once their small unique remainders are "
                   "rewritten (%s to write)\n",
                   ull(w.planned_extents), size(w.planned_bytes).c_str());
    if (w.skipped_for_budget)
      std::fprintf(out_, "  %llu more extents with small remainders left for the write budget "
                   "(%s not written)\n",
                   ull(w.skipped_for_budget), size(w.bytes_skipped_for_budget).c_str());
  }

  // The one place data is written: say what was, and once why a remainder was not.
  void rewrites(const RewriteStats& w) const {
    if (!w.planned_extents) return;
    std::fprintf(out_, "Rewrote %llu small remainders (%s written, %s in new extents, counted "
                 "against the space freed) so that %llu extents could be freed",
                 ull(w.ranges_rewritten), size(w.bytes_written).c_str(),
                 size(w.disk_bytes_allocated).c_str(), ull(w.extents_rewritten));
    if (w.extents_still_referenced)
      std::fprintf(out_, "; %llu extents still held by other references, not rewritten",
                   ull(w.extents_still_referenced));
    std::fprintf(out_, "\n");
    if (w.ranges_fell_back)
      std::fprintf(out_, "  %llu remainders fell back to plain dedupe (left where they were)%s%s\n",
                   ull(w.ranges_fell_back), w.fallback_reason.empty() ? "" : ": ",
                   w.fallback_reason.c_str());
  }

  // Per subvolume, when the run covered several or chose them (src/report/subvolume_report.h).
  void subvolumes(const FilesystemReport& r, const JobOptions& job) const {
    if (o_.quiet || r.per_subvolume.empty() ||
        (r.per_subvolume.size() < 2 && job.subvolumes.empty()))
      return;
    std::fprintf(out_, "Per subvolume (bytes on disk; exclusive: referenced by no other "
                 "subvolume scanned):\n");
    for (const auto& s : r.per_subvolume) {
      if (!s.before.referenced && !s.after.referenced && !s.planned_bytes) continue;  // no data
      std::string what = s.readonly ? "read-only" : "";
      if (!s.snapshot_of.empty())
        what += (what.empty() ? "" : ", ") + std::string("snapshot of ") + printable_path(s.snapshot_of);
      std::fprintf(out_, "  %llu %s%s: exclusive %s", ull(s.id), printable_path(s.path).c_str(),
                   what.empty() ? "" : (" (" + what + ")").c_str(), size(s.before.exclusive).c_str());
      if (r.deduped) std::fprintf(out_, " -> %s", size(s.after.exclusive).c_str());
      std::fprintf(out_, ", referenced %s", size(s.before.referenced).c_str());
      if (r.deduped) std::fprintf(out_, " -> %s", size(s.after.referenced).c_str());
      if (r.deduped && s.deduped_bytes)
        std::fprintf(out_, ", deduped into it %s, freed %s", size(s.deduped_bytes).c_str(),
                     size(s.freed_bytes).c_str());
      else if (!r.deduped && s.planned_bytes)
        std::fprintf(out_, ", -d would dedupe %s into it and free %s", size(s.planned_bytes).c_str(),
                     size(s.would_free_bytes).c_str());
      std::fprintf(out_, "\n");
    }
  }

  void groups(const FilesystemReport& r) const {
    auto read = r.groups.for_each([&](const GroupListing& g) {
      std::fprintf(out_, "%s %s, %zu ranges:\n", size(g.length).c_str(),
                   g.whole_file ? "whole files" : "range", g.members.size());
      for (const auto& m : g.members)
        std::fprintf(out_, "  %s\t%llu\t[layout %u]\t%s\n", printable_path(m.path).c_str(),
                     ull(m.offset), m.layout,
                     m.source ? "source" : m.destination ? "destination" : "unchanged");
    });
    if (!read) std::fprintf(out_, "error: %s\n", read.error().message().c_str());
  }

 private:
  const TextReportOptions& o_;
  const ReaderWords& words_;
  std::FILE* out_;
  std::FILE* err_;
};

}  // namespace

std::string summary_line(const JobReport& report) {
  // Machine-read by scripts written for duperemove: same words, raw bytes.
  return "Comparison of extent info shows a net change in shared extents of: " +
         std::to_string(report.duperemove_net_change()) + "\n";
}

void print_text_report(const JobReport& report, const JobOptions& job,
                       const TextReportOptions& options, std::FILE* out, std::FILE* err) {
  TextReportOptions o = options;
  std::FILE* null_out = nullptr;
  if (o.errors_only) {
    o.quiet = true;
    out = null_out = std::fopen("/dev/null", "w");
    if (!out) return;
  }
  const bool walked = std::string_view(report.reader) == reader_name(ReaderKind::Paths);
  const ReaderWords& words = walked ? kPathWords : kTreeWords;
  const Printer p(o, words, out, err);
  for (const auto& e : report.path_errors) std::fprintf(err, "btrdedupe: %s\n", e.c_str());
  if (!o.quiet)
    for (const auto& n : report.notes) std::fprintf(err, "btrdedupe: note: %s\n", n.c_str());
  // The estimate's figure, where it (not a capped read given up) chose the windows.
  const uint64_t estimated = report.whole_scans_abandoned ? 0 : report.estimated_files;
  for (const auto& fs : report.filesystems) p.filesystem(fs, job, estimated);
  if (!o.quiet && !report.filesystems.empty()) print_text_summary(report, job, o, words, out);
  if (job.dedupe) std::fputs(summary_line(report).c_str(), out);
  if (null_out) std::fclose(null_out);
}

}  // namespace btrdedupe