// A hashfile's runs end to end without root (run_job over an in-memory btrfs, as in
// run_job_test.cpp): what each re-run reads, fingerprints and records after reports,
// stops, changes, renames and deletions, and after runs read in windows.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"
#include "tests/unit/run_job_fixture.h"

namespace btrdedupe::test {
namespace {

class RunJobCatalogTest : public RunJobTest {
 protected:
  JobOptions with_hashfile(bool dedupe = true) const {
    JobOptions o = options(dedupe);
    o.hashfile = hashfile();
    return o;
  }
  // The report's one filesystem, by value: the report is often a temporary.
  FilesystemReport only(const JobReport& report) {
    EXPECT_EQ(report.filesystems.size(), 1u);
    return report.filesystems.empty() ? FilesystemReport{} : report.filesystems[0];
  }
  size_t rows() const {
    auto c = Catalog::open(hashfile());
    return c ? (*c)->files().size() : 0;
  }
};

// A report-only run leaves its duplicates pending: the dedupe run after it matches every
// file again (not only changed ones), and once that is complete nothing is left.
TEST_F(RunJobCatalogTest, ADedupeAfterAReportDedupesWhatTheReportFound) {
  write_pairs(2, 8);
  const FilesystemReport report = only(run(with_hashfile(false)));
  EXPECT_EQ(report.planned_bytes, 2 * 8 * kBlock);
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  const JobReport r = run(with_hashfile());
  EXPECT_FALSE(only(r).catalog.unchanged);
  EXPECT_FALSE(only(r).catalog.incremental);
  EXPECT_EQ(only(r).dedupe.bytes_deduped, 2 * 8 * kBlock);
  EXPECT_TRUE(shares("a1", "b1"));
  EXPECT_TRUE(only(run(with_hashfile())).catalog.unchanged);
}

// A run stopped before its dedupe leaves the duplicates to the next run, also when the
// only change since is a new copy: that run reads the trees whole.
TEST_F(RunJobCatalogTest, ARunStoppedBeforeItsDedupeLeavesTheRestToTheNextRun) {
  write_pairs(1, 8);
  std::atomic<bool> stop{true};
  JobOptions o = with_hashfile();
  o.stop = &stop;
  const JobReport stopped = run(o);
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(only(stopped).dedupe.bytes_deduped, 0u);
  fs.write_file("a0-late", content(100, 8));
  const JobReport r = run(with_hashfile());
  EXPECT_FALSE(only(r).catalog.incremental);
  EXPECT_EQ(only(r).dedupe.bytes_deduped, 2 * 8 * kBlock);  // b0 and the late copy
  EXPECT_TRUE(shares("a0", "a0-late"));
  EXPECT_TRUE(only(run(with_hashfile())).catalog.unchanged);
}

// A grown file is fingerprinted again, a deleted one's row goes (found through its
// directory), a renamed one keeps its row and is not read.
TEST_F(RunJobCatalogTest, ModifiedDeletedAndRenamedFiles) {
  write_pairs(2, 4);
  fs.write_file("c", content(700, 4));
  ASSERT_EQ(run(with_hashfile()).exit_code(), 0);
  EXPECT_EQ(rows(), 5u);
  fs.rewrite_file("c", content(700, 5));
  fs.remove_file("a1");
  fs.rename_file("a0", "a0-renamed");
  const JobReport r = run(with_hashfile());
  const FilesystemReport& f = only(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);  // c grew; a rename changes no content
  EXPECT_EQ(f.catalog.stale_rows, 1u);     // a1
  EXPECT_EQ(f.dedupe.calls, 0u);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(rows(), 4u);
}

// A file rewritten with its twin's content is read again and deduped against the twin the
// catalog names.
TEST_F(RunJobCatalogTest, ARewrittenFileIsDedupedAgainstItsCataloguedTwin) {
  write_pairs(1, 4);
  fs.write_file("c", content(700, 4));
  ASSERT_EQ(run(with_hashfile()).exit_code(), 0);
  fs.rewrite_file("c", content(100, 4));
  const FilesystemReport f = only(run(with_hashfile()));
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);
  EXPECT_GE(f.catalog.candidates, 1u);
  EXPECT_TRUE(shares("a0", "c"));
  EXPECT_EQ(f.freed.bytes, 4 * kBlock);
}

// A hashfile given without paths replays the roots and mode of its last run.
TEST_F(RunJobCatalogTest, AReplayRepeatsTheStoredRootsAndMode) {
  write_pairs(1, 4);
  JobOptions o = with_hashfile(false);
  o.min_file_size = 8192;
  ASSERT_EQ(run(o).exit_code(), 0);
  fs.write_file("a0-late", content(100, 4));
  JobOptions replay;
  replay.hashfile = hashfile();
  const JobReport r = run(replay);
  EXPECT_EQ(r.options.paths, std::vector<std::string>{fs.root()});
  EXPECT_EQ(r.options.min_file_size, 8192u);
  EXPECT_FALSE(r.options.dedupe);
  EXPECT_EQ(only(r).catalog.files_changed, 1u);
  EXPECT_EQ(fs.dedupe_calls(), 0u);
}

// A run read in windows writes every row, so the next one reads only what changed.
TEST_F(RunJobCatalogTest, TheHashfileOfAWindowedRunServesTheNextRuns) {
  write_pairs(3, 4);
  JobOptions o = with_hashfile();
  o.window_files = 2;
  EXPECT_GE(only(run(o)).windows, 3u);
  EXPECT_EQ(rows(), 6u);
  fs.write_file("a2-late", content(300, 4));
  const FilesystemReport f = only(run(o));
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);
  EXPECT_TRUE(shares("a2", "a2-late"));
}

// A report in windows leaves its duplicates pending; the dedupe after it is windowed too
// and frees what a whole run would.
TEST_F(RunJobCatalogTest, ADedupeAfterAReportInWindowsIsWindowedToo) {
  write_pairs(3, 4);
  JobOptions o = with_hashfile(false);
  o.window_files = 2;
  EXPECT_EQ(only(run(o)).planned_bytes, 3 * 4 * kBlock);
  const uint64_t before = fs.referenced_bytes();
  o.dedupe = true;
  const FilesystemReport f = only(run(o));
  EXPECT_GE(f.windows, 3u);
  EXPECT_EQ(before - fs.referenced_bytes(), 3 * 4 * kBlock);
  EXPECT_EQ(f.freed.bytes, 3 * 4 * kBlock);
}

// A tree past the whole run's cap is read in windows without being asked (-B not given):
// here one window of the default size, since the cap is lowered and the window is not.
TEST_F(RunJobCatalogTest, ATreePastTheWholeRunsCapIsReadInWindows) {
  write_pairs(4, 2);
  JobOptions o = options();
  o.whole_run_files = 3;
  const JobReport r = run(o);
  EXPECT_EQ(only(r).windows, 1u);
  EXPECT_GT(only(r).window_files, 3u);
  EXPECT_EQ(only(r).files, 8u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(shares("a" + std::to_string(i), "b" + std::to_string(i)));
}

// Files changed in the last seconds wait to settle: the run leaves them for the next.
TEST_F(RunJobCatalogTest, FilesStillBeingWrittenAreLeftToSettle) {
  write_pairs(1, 4);
  JobOptions o = with_hashfile();
  o.settle_seconds = 3600;
  ASSERT_EQ(run(o).exit_code(), 0);
  fs.write_file("a0-late", content(100, 4));
  const FilesystemReport f = only(run(o));
  EXPECT_EQ(f.catalog.files_settling, 1u);
  EXPECT_FALSE(shares("a0", "a0-late"));
  o.settle_seconds = 0;
  EXPECT_TRUE(only(run(o)).catalog.incremental);
  EXPECT_TRUE(shares("a0", "a0-late"));
}

// A run of a file below the hashfile's roots, with the same options, is a side run: the
// catalog keeps its roots, its rows outside the run's roots, its generations and the
// duplicates its last run left pending, which the next run of its roots dedupes. (This
// reader targets only the whole top directory: the side run's file is read whole by the
// job, and meets no catalogued twin.)
TEST_F(RunJobCatalogTest, ASideRunKeepsTheCatalogsRowsGenerationsAndPendingDuplicates) {
  write_pairs(1, 4);
  fs.write_file("c", content(700, 4));
  ASSERT_EQ(run(with_hashfile(false)).exit_code(), 0);
  auto before = Catalog::open(hashfile());
  ASSERT_TRUE(before.ok());
  const auto generations = (*before)->subvolume_generations();
  before->reset();
  fs.write_file("c-late", content(800, 4));  // the generation moves
  JobOptions side = with_hashfile();
  side.paths = {fs.root() + "/b0"};
  const JobReport r = run(side);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_FALSE(only(r).catalog.incremental);
  EXPECT_EQ(only(r).catalog.files_changed, 1u);
  EXPECT_EQ(only(r).catalog.stale_rows, 0u);
  auto after = Catalog::open(hashfile());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->scope()->roots, std::vector<std::string>{fs.root()});
  EXPECT_EQ((*after)->subvolume_generations(), generations);
  EXPECT_TRUE((*after)->pending());
  after->reset();
  EXPECT_EQ(rows(), 3u);
  EXPECT_FALSE(shares("a0", "b0"));
  EXPECT_EQ(only(run(with_hashfile())).dedupe.bytes_deduped, 4 * kBlock);
  EXPECT_TRUE(shares("a0", "b0"));
}

// Every group's members listed in the report (--list-groups), whole and windowed.
TEST_F(RunJobCatalogTest, ListedGroupsNameEveryCopy) {
  write_pairs(2, 4);
  for (uint64_t window : {0u, 2u}) {
    JobOptions o = options(false);
    o.list_groups = true;
    o.window_files = window;
    const JobReport r = run(o);
    auto listed = only(r).groups.read_all();
    ASSERT_TRUE(listed.ok()) << listed.error().message();
    EXPECT_EQ(listed->size(), 2u) << "windows of " << window;
    for (const auto& g : *listed) EXPECT_EQ(g.members.size(), 2u);
  }
}

}  // namespace
}  // namespace btrdedupe::test
