#include <gtest/gtest.h>

#include "src/run/job.h"
#include "src/report/run_totals.h"

namespace btrdedupe {
namespace {

JobReport report_with_phases(double scan, double dedupe, double run) {
  JobReport report;
  FilesystemReport fs;
  fs.seconds.scan = scan;
  fs.seconds.dedupe = dedupe;
  report.filesystems.push_back(fs);
  report.seconds = run;
  return report;
}

// The elapsed figure is the run's own time: a windowed run spends some of it between its
// phases (the capped read it gave up, each window's commit), which the phases leave out.
TEST(RunTotals, ElapsedIsTheRunsTimeWithWhatNoPhaseHolds) {
  const auto t = run_totals(report_with_phases(1.5, 2.0, 5.0));
  EXPECT_DOUBLE_EQ(t.total_seconds(), 5.0);
  EXPECT_DOUBLE_EQ(t.other_seconds(), 1.5);
}

TEST(RunTotals, ElapsedIsNeverLessThanThePhases) {
  const auto t = run_totals(report_with_phases(1.5, 2.0, 0.0));  // a report built by hand
  EXPECT_DOUBLE_EQ(t.total_seconds(), 3.5);
  EXPECT_DOUBLE_EQ(t.other_seconds(), 0.0);
}

}  // namespace
}  // namespace btrdedupe
