// run_job end to end without root, for every source of batches: the whole tree, a
// hashfile's unchanged and incremental re-runs, windows with and without a hashfile, and
// files named one by one (as --fdupes names them). The filesystem is an in-memory btrfs
// (tests/unit/memory_btrfs.h) whose tree the readers read with their own code and whose
// dedupe calls a script answers; the kernel's own answers are tested on real btrfs.
#include "src/run/job.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <vector>

#include "tests/unit/run_job_fixture.h"

namespace btrdedupe::test {
namespace {

// Every progress report of a run, in order.
struct RecordingSink final : ProgressSink {
  void progress(const char* phase, uint64_t done, uint64_t total) override {
    std::lock_guard lock(mu);
    seen.push_back({phase, done, total});
  }
  struct Seen {
    std::string phase;
    uint64_t done, total;
  };
  std::mutex mu;
  std::vector<Seen> seen;
};

// The freed figure is what the tree says went: the copy's extent.
TEST_F(RunJobTest, WholeTreeDedupesCopiesAndFreesWhatTheTreeFrees) {
  write_pairs(2, 8);
  fs.write_file("other", content(900, 8));
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = run(options());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(report.exit_code(), 0);
  EXPECT_EQ(r.files, 5u);
  EXPECT_EQ(r.windows, 0u);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_TRUE(shares("a1", "b1"));
  EXPECT_FALSE(shares("a0", "other"));
  EXPECT_EQ(r.dedupe.bytes_deduped, 2 * 8 * kBlock);
  EXPECT_EQ(before - fs.referenced_bytes(), 2 * 8 * kBlock);
  EXPECT_EQ(r.freed.bytes, before - fs.referenced_bytes());
}

// Files without sums (nodatasum) are read and summed with the filesystem's algorithm.
TEST_F(RunJobTest, NodatasumCopiesAreReadForTheirSums) {
  fs.write_file("a", content(100, 8), MemoryBtrfs::Stored::NoDataSum);
  fs.write_file("b", content(100, 8), MemoryBtrfs::Stored::NoDataSum);
  fs.write_file("c", content(200, 8));
  const JobReport report = run(options());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_EQ(r.fingerprints.bytes_read, 2 * 8 * kBlock);  // the summed file is not read
  EXPECT_TRUE(shares("a", "b"));
  EXPECT_EQ(r.freed.bytes, 8 * kBlock);
}

// A compressed copy of a plain file: its data summed as the csum tree sums the plain one's,
// so the two match; the freed figure is the compressed extent's disk size.
TEST_F(RunJobTest, ACompressedCopyMatchesItsPlainTwin) {
  fs.write_file("plain", content(100, 8));
  fs.write_file("packed", content(100, 8), MemoryBtrfs::Stored::Compressed);
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = run(options());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_GT(r.fingerprints.bytes_read, 0u);
  EXPECT_EQ(r.dedupe.bytes_deduped, 8 * kBlock);
  EXPECT_EQ(fs.extents_of("plain").size(), 1u);
  EXPECT_TRUE(shares("plain", "packed"));
  EXPECT_EQ(r.freed.bytes, before - fs.referenced_bytes());
}

TEST_F(RunJobTest, DryRunPlansWithoutACall) {
  write_pairs(1, 8);
  const JobReport report = run(options(false));
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  EXPECT_FALSE(shares("a0", "b0"));
  EXPECT_EQ(report.filesystems[0].would_free.bytes, 8 * kBlock);
}

// A hashfile's second run reads no tree; a third after a new copy reads only it and the
// catalogued file it duplicates.
TEST_F(RunJobTest, HashfileReRunsReadNothingThenOnlyWhatChanged) {
  write_pairs(1, 8);
  fs.write_file("c", content(500, 4));
  JobOptions o = options();
  o.hashfile = hashfile();
  ASSERT_EQ(run(o).exit_code(), 0);
  ASSERT_TRUE(shares("a0", "b0"));

  const JobReport unchanged = run(o);
  ASSERT_EQ(unchanged.filesystems.size(), 1u);
  EXPECT_TRUE(unchanged.filesystems[0].catalog.unchanged);
  EXPECT_EQ(fs.dedupe_calls(), 1u);

  fs.write_file("c-copy", content(500, 4));
  const JobReport changed = run(o);
  ASSERT_EQ(changed.filesystems.size(), 1u);
  const FilesystemReport& r = changed.filesystems[0];
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.catalog.incremental);
  EXPECT_EQ(r.catalog.files_changed, 1u);
  EXPECT_EQ(r.catalog.candidates, 1u);
  EXPECT_TRUE(shares("c", "c-copy"));
  EXPECT_EQ(r.freed.bytes, 4 * kBlock);
}

// Windows of two files: each pair's copies may lie in different windows, and still share.
TEST_F(RunJobTest, WindowsWithoutAHashfileDedupeAcrossWindows) {
  write_pairs(3, 4);
  const uint64_t before = fs.referenced_bytes();
  JobOptions o = options();
  o.window_files = 2;
  const JobReport report = run(o);
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_EQ(r.error, "");
  EXPECT_GE(r.windows, 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(shares("a" + std::to_string(i), "b" + std::to_string(i)));
  EXPECT_EQ(before - fs.referenced_bytes(), 3 * 4 * kBlock);
}

TEST_F(RunJobTest, WindowsWithAHashfileRecordEveryRow) {
  write_pairs(3, 4);
  JobOptions o = options();
  o.window_files = 2;
  o.hashfile = hashfile();
  const JobReport first = run(o);
  ASSERT_EQ(first.filesystems.size(), 1u);
  EXPECT_GE(first.filesystems[0].windows, 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(shares("a" + std::to_string(i), "b" + std::to_string(i)));
  // The rows it wrote let the next run know every file.
  const JobReport again = run(o);
  ASSERT_EQ(again.filesystems.size(), 1u);
  EXPECT_TRUE(again.filesystems[0].catalog.unchanged);
}

// Files named one by one (--fdupes gives each group's files as roots), whole files only.
TEST_F(RunJobTest, NamedFilesAreTheirOwnRoots) {
  write_pairs(2, 4);
  JobOptions o = options();
  o.paths = {fs.root() + "/a0", fs.root() + "/b0", fs.root() + "/a1"};
  o.partial = false;
  const JobReport report = run(o);
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_EQ(report.filesystems[0].files, 3u);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_FALSE(shares("a1", "b1"));  // b1 was not named
}

// The kernel's compare differed on a file written during the run: it is left as it is, the
// run says so and exits 3.
TEST_F(RunJobTest, DiffersOnAFileWrittenSinceTheScanLeavesIt) {
  write_pairs(1, 8);
  fs.on_call = [&](size_t) { ::chmod((fs.root() + "/b0").c_str(), 0600); };  // a new ctime
  fs.script = always(outcome(btrfs::DedupeStatus::Differs));
  const JobReport report = run(options());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_FALSE(shares("a0", "b0"));
  EXPECT_EQ(r.dedupe.ranges_differ, 1u);
  EXPECT_EQ(r.freed.bytes, 0u);
  EXPECT_EQ(report.exit_code(), 3);
}

// Differs though neither file changed: the sums proposed more than is equal. The engine
// narrows the range to its equal parts (none here) and that is no failure.
TEST_F(RunJobTest, DiffersOnUnchangedFilesIsNarrowedNotAFailure) {
  write_pairs(1, 8);
  fs.script = always(outcome(btrfs::DedupeStatus::Differs));
  const JobReport report = run(options());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_FALSE(shares("a0", "b0"));
  EXPECT_EQ(r.dedupe.ranges_differ, 0u);
  EXPECT_EQ(r.dedupe.ranges_unequal, 1u);
  EXPECT_GT(fs.dedupe_calls(), 1u);  // the narrowing's calls
  EXPECT_EQ(report.exit_code(), 0);
}

// A full filesystem: the first ENOSPC ends the rounds, the run reports it and exits 1.
TEST_F(RunJobTest, NoSpaceStopsTheRoundsAndFails) {
  write_pairs(3, 8);
  fs.script = always(outcome(btrfs::DedupeStatus::Error, ENOSPC));
  JobOptions o = options();
  o.io_threads = 1;
  const JobReport report = run(o);
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_TRUE(r.dedupe.no_space);
  EXPECT_EQ(r.dedupe.errors_by_code.count(ENOSPC), 1u);
  EXPECT_EQ(report.exit_code(), 1);
  EXPECT_EQ(r.freed.bytes, 0u);
}

// EAGAIN (a send holds the subvolume) is tried again; the retry shares the range.
TEST_F(RunJobTest, EagainIsRetried) {
  write_pairs(1, 8);
  fs.script = [](size_t call, uint64_t length, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(
        n, call == 0 ? outcome(btrfs::DedupeStatus::Error, EAGAIN)
                     : outcome(btrfs::DedupeStatus::Same, 0, length));
  };
  const JobReport report = run(options());  // after a second's wait
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_GE(report.filesystems[0].dedupe.ranges_retried, 1u);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_EQ(report.exit_code(), 0);
}

// Calls that share less than asked (the kernel stops at a page it could not lock): the
// engine asks again for the rest; the figures add what each call said it shared, and the
// freed figure is what the tree freed (nothing: the copy's last sector keeps its extent).
TEST_F(RunJobTest, ShortDedupesCountWhatWasShared) {
  write_pairs(1, 8);
  std::atomic<uint64_t> shared{0};
  fs.script = [&](size_t, uint64_t length, size_t n) {
    const uint64_t half = length / 2 / kBlock * kBlock;
    shared += half * n;
    return std::vector<btrfs::DedupeOutcome>(n, outcome(btrfs::DedupeStatus::Same, 0, half));
  };
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = run(options());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_GT(fs.dedupe_calls(), 1u);
  EXPECT_EQ(r.dedupe.bytes_deduped, shared.load());
  EXPECT_LT(shared.load(), 8 * kBlock);
  EXPECT_EQ(before, fs.referenced_bytes());
  EXPECT_EQ(r.freed.bytes, 0u);
}

// A stop mid-round: no new round starts, the run says it stopped.
TEST_F(RunJobTest, AStopMidRoundEndsTheRun) {
  write_pairs(4, 8);
  std::atomic<bool> stop{false};
  fs.on_call = [&](size_t) { stop = true; };
  JobOptions o = options();
  o.io_threads = 1;
  o.stop = &stop;
  const JobReport report = run(o);
  EXPECT_TRUE(report.stopped);
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_GE(report.filesystems[0].dedupe.rounds_not_started, 1u);
  EXPECT_LT(fs.dedupe_calls(), 4u);
}

// A full filesystem after remainders were planned: none is rewritten, each stays where it
// was, and the report says why.
TEST_F(RunJobTest, NoSpaceLeavesThePlannedRemaindersWhereTheyAre) {
  fs.write_file("a", content(100, 8));
  std::vector<uint32_t> b = content(100, 7);
  b.push_back(999);  // its extent's last sector is its own: a remainder to rewrite
  fs.write_file("b", b);
  fs.script = always(outcome(btrfs::DedupeStatus::Error, ENOSPC));
  JobOptions o = options();
  o.rewrite_remainders = true;
  o.io_threads = 1;
  RecordingSink sink;
  const JobReport report = run_job(o, &sink, fs);
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_TRUE(r.dedupe.no_space);
  ASSERT_EQ(r.rewrite.planned_extents, 1u);
  // The phase was announced (the remainders a round reads from come before the rounds).
  EXPECT_TRUE(std::any_of(sink.seen.begin(), sink.seen.end(), [&](const auto& s) {
    return s.phase == "rewrite" && s.done == 0 && s.total == r.rewrite.planned_bytes;
  }));
  EXPECT_EQ(r.rewrite.ranges_fell_back, 1u);
  EXPECT_NE(r.rewrite.fallback_reason.find("full"), std::string::npos)
      << r.rewrite.fallback_reason;
  EXPECT_EQ(r.rewrite.ranges_rewritten, 0u);
  EXPECT_FALSE(shares("a", "b"));
}

// Each phase reports its progress to the sink; the dedupe's ends at what was planned.
TEST_F(RunJobTest, ProgressGoesToTheSinkPhaseByPhase) {
  RecordingSink sink;
  write_pairs(2, 8);
  const JobReport report = run_job(options(), &sink, fs);
  ASSERT_EQ(report.exit_code(), 0);
  std::vector<std::string> phases;
  uint64_t dedupe_done = 0, dedupe_total = 0;
  for (const auto& s : sink.seen) {
    if (phases.empty() || phases.back() != s.phase) phases.push_back(s.phase);
    if (s.phase != "dedupe") continue;
    EXPECT_GE(s.done, dedupe_done);
    dedupe_done = s.done;
    dedupe_total = s.total;
  }
  for (const char* phase : {"scan", "fingerprint", "match", "dedupe"})
    EXPECT_NE(std::find(phases.begin(), phases.end(), phase), phases.end()) << phase;
  EXPECT_EQ(dedupe_total, 2 * 8 * kBlock);
  EXPECT_EQ(dedupe_done, dedupe_total);
}

}  // namespace
}  // namespace btrdedupe::test
