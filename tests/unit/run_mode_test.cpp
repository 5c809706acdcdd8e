#include "src/run/run_mode.h"

#include <gtest/gtest.h>

#include <vector>

namespace btrdedupe {
namespace {

// How the trees answer when a way is tried, for walking the choice as run_job does.
struct Trees {
  bool incremental_possible = false;   // the hashfile gives an incremental scan
  bool windows_possible = true;        // windowed_scan gives a base
  bool more_than_cap = false;          // a capped whole scan stops with EFBIG
  bool estimated_past_cap = false;     // the inode numbers tell of many more files
};

// The ways a run tries, in order, until one reads the trees (or ends the run).
std::vector<RunMode> modes_tried(RunFacts facts, const Trees& trees) {
  std::vector<RunMode> tried;
  for (;;) {
    const RunMode mode = next_run_mode(facts);
    tried.push_back(mode);
    switch (mode) {
      case RunMode::Incremental:
        if (trees.incremental_possible) return tried;
        facts.incremental_declined = true;
        break;
      case RunMode::Windows:
        if (trees.windows_possible) return tried;
        facts.windows_declined = true;
        break;
      case RunMode::EstimateFiles:
        facts.files_estimated = true;
        facts.estimated_past_cap = trees.estimated_past_cap;
        break;
      case RunMode::WholeCapped:
        if (!trees.more_than_cap) return tried;
        facts.too_many_files = true;
        break;
      default:
        return tried;
    }
    if (tried.size() > 8) return tried;  // a loop: the test fails on the sequence
  }
}

RunFacts no_hashfile() {
  RunFacts f;
  f.may_take_windows = true;  // a temporary catalog serves the windows
  return f;
}

RunFacts hashfile(bool may_take_windows) {
  RunFacts f;
  f.catalog = true;
  f.may_take_windows = may_take_windows;
  return f;
}

using enum RunMode;

TEST(RunMode, AnUnchangedHashfileReadsNoTree) {
  RunFacts f = hashfile(true);
  f.unchanged = true;
  EXPECT_EQ(next_run_mode(f), Unchanged);
  f.nothing_selected = true;  // the last run's record stands, selection or not
  EXPECT_EQ(next_run_mode(f), Unchanged);
}

TEST(RunMode, UnchangedMeansNothingWithoutAHashfile) {
  RunFacts f = no_hashfile();
  f.unchanged = true;
  EXPECT_EQ(next_run_mode(f), EstimateFiles);
}

TEST(RunMode, AHashfileTriesAnIncrementalScanFirst) {
  EXPECT_EQ(modes_tried(hashfile(true), {.incremental_possible = true}),
            (std::vector{Incremental}));
  RunFacts f = hashfile(true);
  f.windows_requested = true;
  EXPECT_EQ(modes_tried(f, {.incremental_possible = true}), (std::vector{Incremental}));
}

TEST(RunMode, AFlatSelectionOfNoSubvolumeScansNothing) {
  RunFacts f = hashfile(true);
  f.nothing_selected = true;
  EXPECT_EQ(modes_tried(f, {.incremental_possible = true}), (std::vector{NothingSelected}));
  f = no_hashfile();
  f.nothing_selected = true;
  f.windows_requested = true;
  EXPECT_EQ(modes_tried(f, {}), (std::vector{NothingSelected}));
}

TEST(RunMode, AWholeRunIsCappedWhereWindowsCouldFollow) {
  EXPECT_EQ(modes_tried(no_hashfile(), {}), (std::vector{EstimateFiles, WholeCapped}));
  EXPECT_EQ(modes_tried(hashfile(true), {}),
            (std::vector{Incremental, EstimateFiles, WholeCapped}));
}

// Near the cap the estimate cannot tell: the capped scan does, and past it windows follow.
TEST(RunMode, PastTheCapTheRunTakesWindows) {
  EXPECT_EQ(modes_tried(no_hashfile(), {.more_than_cap = true}),
            (std::vector{EstimateFiles, WholeCapped, Windows}));
  EXPECT_EQ(modes_tried(hashfile(true), {.more_than_cap = true}),
            (std::vector{Incremental, EstimateFiles, WholeCapped, Windows}));
}

// An estimate well past the cap takes windows without reading up to the cap first; where
// windows cannot be taken, the tree is read whole, uncapped, as after a capped scan.
TEST(RunMode, AnEstimateWellPastTheCapTakesWindowsAtOnce) {
  const Trees many{.more_than_cap = true, .estimated_past_cap = true};
  EXPECT_EQ(modes_tried(no_hashfile(), many), (std::vector{EstimateFiles, Windows}));
  EXPECT_EQ(modes_tried(hashfile(true), many),
            (std::vector{Incremental, EstimateFiles, Windows}));
  Trees no_windows = many;
  no_windows.windows_possible = false;
  EXPECT_EQ(modes_tried(no_hashfile(), no_windows),
            (std::vector{EstimateFiles, Windows, Whole}));
}

// A hashfile whose rows already number more than the cap (its last whole read was in
// windows) takes windows without reading up to the cap first.
TEST(RunMode, AHashfileKnownPastTheCapTakesWindowsAtOnce) {
  RunFacts f = hashfile(true);
  f.catalogued_past_cap = true;
  EXPECT_EQ(modes_tried(f, {.more_than_cap = true}), (std::vector{Incremental, Windows}));
  EXPECT_EQ(modes_tried(f, {.windows_possible = false}),
            (std::vector{Incremental, Windows, Whole}));
  f.may_take_windows = false;  // a side run: never windows, never a cap
  EXPECT_EQ(modes_tried(f, {.more_than_cap = true}), (std::vector{Incremental, Whole}));
}

TEST(RunMode, PastTheCapWithoutWindowsTheRunReadsWholeUncapped) {
  EXPECT_EQ(modes_tried(no_hashfile(), {.windows_possible = false, .more_than_cap = true}),
            (std::vector{EstimateFiles, WholeCapped, Windows, Whole}));
}

TEST(RunMode, WindowsAskedForComeFirstAndUncapped) {
  RunFacts f = no_hashfile();
  f.windows_requested = true;
  EXPECT_EQ(modes_tried(f, {.more_than_cap = true}), (std::vector{Windows}));
  // Windows that cannot be taken leave a whole scan without the cap: -B asked for no cap.
  EXPECT_EQ(modes_tried(f, {.windows_possible = false, .more_than_cap = true}),
            (std::vector{Windows, Whole}));
}

TEST(RunMode, AHashfileThatMayNotTakeWindowsReadsWhole) {
  RunFacts f = hashfile(false);
  EXPECT_EQ(modes_tried(f, {.more_than_cap = true}), (std::vector{Incremental, Whole}));
  f.windows_requested = true;
  EXPECT_EQ(modes_tried(f, {.more_than_cap = true}), (std::vector{Incremental, Whole}));
}

TEST(RunMode, AWalkOfThePathsReadsThemWholeWhateverElseIsAsked) {
  for (RunFacts f : {no_hashfile(), hashfile(true), hashfile(false)}) {
    f.walks_paths = true;
    f.windows_requested = true;  // -B: a walk has no windows to take
    f.estimated_past_cap = true;
    EXPECT_EQ(modes_tried(f, {.incremental_possible = true}), (std::vector{Whole}));
  }
}

}  // namespace
}  // namespace btrdedupe
