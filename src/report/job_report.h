// What a run did, as plain data: per filesystem and for the whole job. Both printers (text
// and JSON) and the tests read the same figures; src/report/job_report.cpp sums them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/dedupe/remainder_rewrite.h"
#include "src/fingerprint/fingerprint.h"
#include "src/fingerprint/short_file_proof.h"
#include "src/plan/freed_space.h"
#include "src/plan/freeing_runs.h"
#include "src/plan/plan_check.h"
#include "src/read/tree_scan.h"
#include "src/report/group_listing.h"
#include "src/report/subvolume_report.h"
#include "src/report/work_listing.h"
#include "src/run/job_options.h"

namespace btrdedupe {

struct PhaseSeconds {
  double scan = 0, fingerprint = 0, match = 0, dedupe = 0, confirm = 0;
};

// What happened to the paths of one filesystem.
struct FilesystemReport {
  std::vector<std::string> roots;
  std::string fsid;
  std::string error;                  // non-empty: this filesystem's run failed here
  uint64_t subvolumes = 0, files = 0, extents = 0, tree_items = 0, tree_searches = 0;
  PassedOver passed_over;
  uint64_t excluded = 0;              // files and subvolumes left out by JobOptions::exclude
  CatalogStats catalog;               // what the hashfile saved (catalog.used: there was one)
  int64_t started = 0;                // unix time the run began
  btrfs::Timespec started_at;         // the same, to the nanosecond (before the scan)
  SharingSummary before, after;       // after: re-read from the tree once dedupe ran
  FingerprintStats fingerprints;
  // One-sector files read to prove their sums' matches (src/fingerprint/short_file_proof.h).
  ShortFileProofCounts short_file_proofs;
  // Windows the tree was read in (0: whole). Then sharing and per-subvolume figures are
  // the first window's files' own plus what each window's dedupe changed among its files
  // and their earlier twins (a file is counted once; extents shared across windows may be
  // counted in each).
  uint64_t windows = 0;
  uint64_t window_files = 0;          // files a window held at most (-B, or kWindowFiles)
  uint64_t whole_file_groups = 0, partial_groups = 0;
  uint64_t planned_bytes = 0, planned_rounds = 0, readonly_ranges_left = 0;
  // Disk space by whole physical extents (src/plan/freed_space.h): what the plan would free,
  // and what the dedupe freed, read from the extent tree once its transaction committed.
  // before.allocated_bytes - freed.bytes is after.allocated_bytes.
  FreedSpace would_free, freed;
  // Each extent the plan frees, looked up after the dedupe: freed, or why it is still
  // allocated (src/plan/plan_check.h).
  PlanCheck plan_check;
  // Short runs added where they let a destination extent go (src/plan/freeing_runs.h).
  FreeingRuns freeing_runs;
  GroupListings groups;               // only with JobOptions::list_groups
  WorkListing work;                   // only with JobOptions::most_valuable_first and -d
  bool deduped = false;
  unsigned io_threads = 0;            // dedupe workers used
  DedupeStats dedupe;
  RewriteStats rewrite;               // small remainders rewritten (src/dedupe/remainder_rewrite.h)
  // Regular extents of the files the dedupe writes into (destinations, rewritten
  // remainders), before and after it (after = before when nothing was changed): how much
  // the dedupe fragmented them.
  uint64_t destination_extents_before = 0, destination_extents_after = 0;
  PhaseSeconds seconds;
  // Per subvolume scanned: exclusive bytes before/after, bytes deduped (or, without a
  // dedupe, that would be deduped) into it (src/report/subvolume_report.h).
  std::vector<SubvolumeFigures> per_subvolume;
};

struct JobReport {
  std::vector<FilesystemReport> filesystems;
  std::vector<std::string> path_errors;  // paths that could not be scanned at all
  std::vector<std::string> notes;        // worth saying, not errors (subvolumes left out)
  const char* reader = "tree";           // which reader ran (src/read/root_reader.h)
  bool stopped = false;                  // JobOptions::stop was seen: the run ended early
  JobOptions options;                    // as run: a replay fills paths and options from the hashfile

  // 0: all done.
  // 1: something failed: a path could not be scanned, a filesystem's run failed, data could
  //    not be read for fingerprints, or the kernel failed a dedupe for another reason than
  //    those of 3 (ENOSPC, EIO, ...).
  // 3: the run finished, but some ranges were left as they were: changed since the scan
  //    (replaced, resized, rewritten: the kernel's compare differed), or refused by the
  //    kernel for what the file is (EINVAL, EPERM, ETXTBSY, EAGAIN after retries,
  //    EROFS, EXDEV). Read-only snapshot ranges left alone by design do not count.
  // (A stop is not an exit code here: the program maps it to 128 + signal.)
  int exit_code() const;
  // Logical bytes newly shared, each counted once (a deduped pair of 4 MiB: 4 MiB).
  int64_t net_shared_change() const;
  // duperemove's "net change in shared extents": bytes newly in shared extents, counted in
  // every file that holds them (a deduped pair of 4 MiB: 8 MiB). The summary line's number.
  int64_t duperemove_net_change() const;
  // The run was cut short by JobOptions::stop set by a --max-runtime deadline (set by main).
  bool time_up = false;
  // Whole reads capped at JobOptions::whole_run_files that found more files and gave way to
  // windows: their time is in `seconds`, not in a phase.
  uint64_t whole_scans_abandoned = 0;
  // The regular files the trees hold, estimated from inode numbers (src/scope/inode_count_estimate.h)
  // before a capped whole read; when well past whole_run_files, the run took windows at once.
  // 0: not estimated (a hashfile's count, -B, no -r, or the trees could not be searched).
  uint64_t estimated_files = 0;
  // From run_job's start to its report: the phases (FilesystemReport::seconds) and what
  // lies between them, such as a capped whole read given up for windows, or a window's
  // commit and figures.
  double seconds = 0;
};

// The name both reports give the signal a run stopped on: "SIGTERM"; "SIG?" for a number
// without one.
std::string signal_name(int signal);

}  // namespace btrdedupe
