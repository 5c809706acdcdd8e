// Figures summed over a run's filesystems. Apart from the text report because the JSON
// report's "totals" are the same sums: one place adds them up for both.
#pragma once

#include <cstdint>
#include <map>

#include "src/report/job_report.h"

namespace btrdedupe {

// Figures summed over a run's filesystems: the summary block and the JSON "totals".
struct RunTotals {
  uint64_t filesystems = 0, subvolumes = 0, files = 0, extents = 0, excluded = 0;
  uint64_t logical_bytes = 0, already_shared_bytes = 0;
  uint64_t extents_from_csums = 0, bytes_from_csums = 0, extents_read = 0, bytes_read = 0;
  uint64_t extents_from_twins = 0, bytes_from_twins = 0;
  ShortFileProofCounts short_file_proofs;
  uint64_t whole_file_groups = 0, partial_groups = 0, planned_bytes = 0, planned_rounds = 0;
  uint64_t readonly_ranges_left = 0;
  uint64_t bytes_deduped = 0, calls = 0, ranges_same = 0;
  uint64_t rounds_not_started = 0, bytes_not_started = 0;  // left by a stop
  uint64_t allocated_before = 0, freed_bytes = 0, would_free_bytes = 0;  // whole extents
  uint64_t bytes_rewritten = 0;  // written by remainder rewrites
  uint64_t ranges_changed = 0;   // changed since the scan: ranges_changed + ranges_differ
  uint64_t ranges_refused = 0;   // the kernel refused (ranges_failed)
  std::map<int, uint64_t> refused_by_code;
  uint64_t path_errors = 0, filesystem_errors = 0, read_errors = 0;
  PhaseSeconds seconds;
  double run_seconds = 0;  // JobReport::seconds
  // The run's time (JobReport::seconds), never less than its phases' sum; and the part of
  // it in no phase.
  double total_seconds() const;
  double other_seconds() const;
};
RunTotals run_totals(const JobReport& report);

}  // namespace btrdedupe
