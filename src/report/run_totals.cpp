// Summing a run's figures over its filesystems; why this is apart from the text report:
// src/report/run_totals.h.
#include "src/report/run_totals.h"

#include <algorithm>

namespace btrdedupe {

namespace {

double phase_seconds(const RunTotals& t) {
  return t.seconds.scan + t.seconds.fingerprint + t.seconds.match + t.seconds.dedupe +
         t.seconds.confirm;
}

}  // namespace

double RunTotals::total_seconds() const { return std::max(phase_seconds(*this), run_seconds); }

double RunTotals::other_seconds() const { return total_seconds() - phase_seconds(*this); }

RunTotals run_totals(const JobReport& report) {
  RunTotals t;
  t.run_seconds = report.seconds;
  t.path_errors = report.path_errors.size();
  for (const auto& fs : report.filesystems) {
    ++t.filesystems;
    t.subvolumes += fs.subvolumes;
    t.files += fs.files;
    t.extents += fs.extents;
    t.excluded += fs.excluded;
    t.logical_bytes += fs.before.logical_bytes;
    t.already_shared_bytes += fs.before.shared_bytes;
    t.extents_from_csums += fs.fingerprints.extents_from_csums;
    t.bytes_from_csums += fs.fingerprints.bytes_from_csums;
    t.extents_read += fs.fingerprints.extents_read;
    t.bytes_read += fs.fingerprints.bytes_read;
    t.extents_from_twins += fs.fingerprints.extents_from_twins;
    t.bytes_from_twins += fs.fingerprints.bytes_from_twins;
    t.short_file_proofs.add(fs.short_file_proofs);
    t.read_errors += fs.fingerprints.read_errors;
    t.whole_file_groups += fs.whole_file_groups;
    t.partial_groups += fs.partial_groups;
    t.planned_bytes += fs.planned_bytes;
    t.planned_rounds += fs.planned_rounds;
    t.readonly_ranges_left += fs.readonly_ranges_left;
    t.bytes_deduped += fs.dedupe.bytes_deduped;
    t.calls += fs.dedupe.calls;
    t.allocated_before += fs.before.allocated_bytes;
    t.freed_bytes += fs.freed.bytes;
    t.bytes_rewritten += fs.rewrite.bytes_written;
    t.would_free_bytes += fs.would_free.bytes;
    t.rounds_not_started += fs.dedupe.rounds_not_started;
    t.bytes_not_started += fs.dedupe.bytes_not_started;
    t.ranges_same += fs.dedupe.ranges_same;
    t.ranges_changed += fs.dedupe.ranges_changed + fs.dedupe.ranges_differ;
    t.ranges_refused += fs.dedupe.ranges_failed;
    for (const auto& [code, n] : fs.dedupe.errors_by_code) t.refused_by_code[code] += n;
    if (!fs.error.empty()) ++t.filesystem_errors;
    t.seconds.scan += fs.seconds.scan;
    t.seconds.fingerprint += fs.seconds.fingerprint;
    t.seconds.match += fs.seconds.match;
    t.seconds.dedupe += fs.seconds.dedupe;
    t.seconds.confirm += fs.seconds.confirm;
  }
  return t;
}

}  // namespace btrdedupe
