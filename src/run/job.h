// One run of btrdedupe, start to finish: scan, fingerprint, match, plan, dedupe, confirm.
// The command line builds JobOptions and prints the JobReport (as text or JSON); the
// report is plain data so both printers and tests read the same figures.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/fingerprint/fingerprint.h"
#include "src/plan/freed_space.h"
#include "src/plan/freeing_runs.h"
#include "src/report/group_listing.h"
#include "src/plan/plan_check.h"
#include "src/plan/remainder_plan.h"
#include "src/dedupe/remainder_rewrite.h"
#include "src/fingerprint/short_file_proof.h"
#include "src/report/subvolume_report.h"
#include "src/scope/subvolume_selection.h"
#include "src/read/tree_scan.h"
#include "src/report/work_listing.h"

namespace btrdedupe {

// A full run holds ~300 bytes per file at its peak: up to this many files it reads the
// tree whole (~58 MiB), beyond it in windows.
inline constexpr uint64_t kWholeRunFiles = 180000;
// Files per window when the run chose windows itself. A window also holds up to two
// earlier twins per file.
inline constexpr uint64_t kWindowFiles = 16384;

struct JobOptions {
  std::vector<std::string> paths;
  bool recursive = false;
  bool dedupe = false;
  uint64_t min_file_size = 0;
  uint64_t block_size = 128 * 1024;
  bool partial = true;             // range matches inside non-identical files
  bool dedupe_readonly = false;    // allow destinations in read-only snapshots
  unsigned io_threads = 0;         // dedupe workers; 0: by the storage (src/dedupe/io_threads.h)
  Prefetch prefetch = Prefetch::Fadvise;
  bool list_groups = false;        // keep every group's member paths in the report
  std::string hashfile;            // SQLite catalog; "" = in memory (see src/catalog/catalog.h)
  // Files per window of a run read in windows (-B): memory follows the window, not the
  // tree. 0: automatic, a tree of up to whole_run_files files is read whole (fastest), a
  // larger one in windows of kWindowFiles (CatalogSession::windowed_scan).
  uint64_t window_files = 0;
  uint64_t whole_run_files = kWholeRunFiles;  // the automatic choice's limit (tests lower it)
  // Leaves files and nested subvolumes out of the scan (see ScanOptions::exclude).
  std::function<bool(const std::string& root, const std::string& relative)> exclude;
  // The patterns behind `exclude`, as given: part of a hashfile's scope.
  std::vector<std::string> exclude_patterns;
  // --subvol, --exclude-subvol, --all-subvols (src/scope/subvolume_selection.h). With a flat
  // selection the paths only name the filesystem (they must all be on one).
  SubvolumeSelection subvolumes;
  // Set (by a signal handler) to stop cleanly: no new dedupe round starts, no new
  // filesystem's dedupe starts; the report says so (JobReport::stopped).
  const std::atomic<bool>* stop = nullptr;
  // A time-boxed run (--max-runtime): dedupe the groups that share the most bytes first and
  // list, per group, whether it was done or left (FilesystemReport::work).
  bool most_valuable_first = false;
  // Rewrite small remainders so that their extents can be freed (src/plan/remainder_plan.h);
  // --dedupe-options=norewrite turns it off. The budget: bytes written per filesystem.
  bool rewrite_remainders = true;
  uint64_t rewrite_budget = RemainderRules{}.budget_bytes;
};

// Where the run stands as a whole: the data it has and will go through, and its window.
// A windowed run learns its size as it reads, so its totals are estimates until the last
// window (CatalogSession::read_fraction).
struct RunPosition {
  uint64_t window = 0;          // 1-based window under way; 0: the tree is read whole
  uint64_t windows = 0;         // windows in all, estimated (0: not known)
  bool estimated = false;       // windows and bytes_total are estimates
  uint64_t bytes_before = 0;    // data in regular extents of the windows done
  uint64_t window_bytes = 0;    // of the window under way (a whole run: all of it)
  uint64_t bytes_total = 0;     // of the whole run
  bool dedupe = false;          // the run dedupes (its phases weigh differently)
};

// Progress events for people and monitors. Called from the job's thread.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // phase: "scan", "fingerprint", "match", "dedupe", "rewrite", "confirm"; bytes done of total
  // (total 0 when unknown).
  virtual void progress(const char* phase, uint64_t done, uint64_t total) = 0;
  // The run's position, once its data is known and again at each window.
  virtual void position(const RunPosition& /*where*/) {}
};

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

JobReport run_job(const JobOptions& options, ProgressSink* progress = nullptr);

}  // namespace btrdedupe
