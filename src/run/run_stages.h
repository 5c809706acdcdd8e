// The stages each batch of a run goes through (src/run/batch_loop.h), whatever its source:
// match and plan, dedupe, measure the space freed, record in the hashfile. Each adds its
// figures to the filesystem's report, so a run of many batches reports their sums.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "src/catalog/catalog_session.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/plan/dedupe_plan.h"
#include "src/fingerprint/fingerprint.h"
#include "src/plan/freed_space.h"
#include "src/report/group_listing.h"
#include "src/report/job_report.h"
#include "src/run/run_context.h"
#include "src/plan/plan_check.h"
#include "src/plan/remainder_plan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

using Clock = std::chrono::steady_clock;

// Seconds since `t`, for PhaseSeconds.
double since(Clock::time_point t);

// A progress event, when someone listens.
void report_progress(ProgressSink* sink, const char* phase, uint64_t done, uint64_t total);

struct PlannedWork {
  DedupePlan plan;
  std::map<uint64_t, uint64_t> planned;  // bytes by destination subvolume
  std::vector<PhysicalExtent> extents;   // that its destination ranges reference
  RemainderPlan remainders;              // rewritten after the rounds (JobOptions::rewrite_remainders)
  RewriteStats rewritten;                // what dedupe_planned's rewrite did (also in r.rewrite)
  // The files the dedupe writes into (destinations, rewritten remainders), as
  // (subvolume, inode), sorted: their extents are counted before and after.
  std::vector<std::pair<uint64_t, uint64_t>> destination_files;
  // What the plan writes into and reads from, for the check of plan against disk.
  PlanFootprint footprint;
  // (file, data hash) of the one-sector files the proof read (ShortFileProof::hashes_read).
  std::vector<std::pair<uint32_t, uint64_t>> short_hashes;
  // Every group's members (JobOptions::list_groups), for the report's listing.
  std::vector<GroupListing> listings;
};

// Regular extent items of `files` (PlannedWork::destination_files) in `scan`.
uint64_t count_extents_of(const ScanResult& scan,
                          const std::vector<std::pair<uint64_t, uint64_t>>& files);

// A window's groups (roles.in_windows()): those of earlier twins alone were found, counted
// and planned in their own window and go; a group with two earlier twins, or with one an
// earlier group held (EarlierGroupedTwin), grows a group an earlier window counted and
// stays, uncounted. The whole-file and partial group counts are those of the rest.
// Returns, for each group that stays, whether it grew an earlier window's group.
std::vector<bool> drop_groups_of_earlier_windows(const BatchRoles& roles, MatchResult& matches);

// Matches the fingerprinted files of `scan` (and frees their sums), plans the rounds, and
// adds the figures to `r`. `roles`: what each file is there for (CatalogSession::roles;
// empty in a whole run): in a window, groups of earlier twins alone were counted and
// planned in their own window.
PlannedWork match_and_plan(const ScanResult& scan, FingerprintResult& fp, const RunContext& run,
                           const BatchRoles& roles, FilesystemReport& r);

// Runs the plan's rounds with the job's workers, then rewrites the planned remainders
// (their figures go to r.rewrite).
DedupeStats dedupe_planned(const ScanResult& scan, PlannedWork& work, const RunContext& run,
                           FilesystemReport& r);

// After a dedupe: the destination extents the extent tree no longer holds, once the
// transaction committed, less what rewritten remainders took. `scanned_at`: the
// filesystem's generation when the run's scan began (ScanResult::fs of that scan, not of
// a confirmation), so a new extent at a freed one's address is not taken for it. An
// error: the tree could not be asked (nothing added to `r`); the dedupe stands.
// `scan`: the confirmation scan; the planned extents still there are given their reason
// (src/plan/plan_check.h) in r.plan_check.
btrfs::Result<void> measure_freed_space(const ScanResult& scan,
                                        const std::vector<PhysicalExtent>& extents,
                                        const PlanFootprint& footprint,
                                        const RewriteStats& rewritten, uint64_t scanned_at,
                                        RunKernel& kernel, FilesystemReport& r);

// The space of the scanned extents after the run: what was allocated less what is gone
// (an extent no scanned file references any more counts until it is freed). Once the
// confirmation's per-window or whole figures are in.
void settle_allocated_after(FilesystemReport& r);

// Once r.per_subvolume is filled: each subvolume's share of the space freed and of what the
// plan would free.
void add_freed_by_subvolume(FilesystemReport& r);

// The run as the hashfile records it, from its report.
RunRecord run_record(const FilesystemReport& r);



}  // namespace btrdedupe
