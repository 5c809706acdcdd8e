// run_job end to end when the run walks the paths (src/read/path_walk.h) without root:
// the in-memory btrfs (tests/unit/memory_btrfs.h) says there is no CAP_SYS_ADMIN, or that
// it is XFS, so the job chooses the walk; its FIEMAP answers come from the same extents
// the dedupe calls share, so what the run counts as freed is checked against the
// filesystem's own references.
#include "src/run/job.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/run_job_fixture.h"

namespace btrdedupe::test {
namespace {

class RunJobWalkTest : public RunJobTest {
 protected:
  RunJobWalkTest() { fs.standing.may_search_trees = false; }
  // A run that must have walked: a tree read would pass most assertions just as well.
  JobReport walk(const JobOptions& o) {
    JobReport report = run(o);
    EXPECT_EQ(std::string(report.reader), "paths");
    return report;
  }
  static bool noted(const JobReport& report, const std::string& words) {
    for (const auto& note : report.notes)
      if (note.find(words) != std::string::npos) return true;
    return false;
  }
};

// No checksum tree: every file's data is read for its sums, and the copies still share.
TEST_F(RunJobWalkTest, AWalkDedupesCopiesAndFreesWhatTheFilesystemFrees) {
  write_pairs(2, 8);
  fs.write_file("other", content(900, 8));
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = walk(options());
  EXPECT_TRUE(noted(report, "tree search needs root"));
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(report.exit_code(), 0);
  EXPECT_EQ(r.files, 5u);
  EXPECT_EQ(r.fingerprints.bytes_read, 5 * 8 * kBlock);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_TRUE(shares("a1", "b1"));
  EXPECT_FALSE(shares("a0", "other"));
  EXPECT_EQ(r.dedupe.bytes_deduped, 2 * 8 * kBlock);
  EXPECT_EQ(before - fs.referenced_bytes(), 2 * 8 * kBlock);
  EXPECT_EQ(r.freed.bytes, before - fs.referenced_bytes());
}

// XFS has no trees: the walk, whatever the privileges, and the run says why.
TEST_F(RunJobWalkTest, OnXfsTheRunWalksEvenAsRoot) {
  fs.standing.fs = btrfs::FsKind::Xfs;
  fs.standing.may_search_trees = true;
  write_pairs(1, 4);
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = walk(options());
  EXPECT_TRUE(noted(report, "xfs has no trees to search"));
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_EQ(report.filesystems[0].freed.bytes, before - fs.referenced_bytes());
}

TEST_F(RunJobWalkTest, ADryRunWalkPlansWithoutACall) {
  write_pairs(1, 8);
  const JobReport report = walk(options(false));
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  EXPECT_FALSE(shares("a0", "b0"));
  EXPECT_EQ(report.filesystems[0].would_free.bytes, 8 * kBlock);
}

// Each run walks every file (no generations); the hashfile's rows tell what changed by
// size and mtime, so an unchanged tree makes no call and a new copy is deduped alone.
TEST_F(RunJobWalkTest, HashfileReRunsWalkAgainAndDedupeOnlyWhatChanged) {
  write_pairs(1, 8);
  fs.write_file("c", content(500, 4));
  JobOptions o = options();
  o.hashfile = hashfile();
  ASSERT_EQ(walk(o).exit_code(), 0);
  ASSERT_TRUE(shares("a0", "b0"));
  ASSERT_EQ(fs.dedupe_calls(), 1u);

  const JobReport unchanged = walk(o);
  ASSERT_EQ(unchanged.filesystems.size(), 1u);
  const CatalogStats& same = unchanged.filesystems[0].catalog;
  EXPECT_EQ(unchanged.exit_code(), 0);
  EXPECT_FALSE(same.unchanged);  // no generations: only the walk can tell
  EXPECT_EQ(same.files_changed, 0u);
  EXPECT_EQ(same.files_known, 3u);
  EXPECT_EQ(fs.dedupe_calls(), 1u);
  EXPECT_EQ(unchanged.filesystems[0].freed.bytes, 0u);

  fs.write_file("c-copy", content(500, 4));
  const JobReport changed = walk(o);
  ASSERT_EQ(changed.filesystems.size(), 1u);
  const FilesystemReport& r = changed.filesystems[0];
  EXPECT_EQ(r.error, "");
  EXPECT_FALSE(r.catalog.incremental);
  EXPECT_EQ(r.catalog.files_changed, 1u);
  EXPECT_EQ(r.catalog.candidates, 1u);
  EXPECT_TRUE(shares("c", "c-copy"));
  EXPECT_EQ(fs.dedupe_calls(), 2u);
  EXPECT_EQ(r.freed.bytes, 4 * kBlock);
}

// -B asks for windows a walk does not have: noted, and the tree is walked whole.
TEST_F(RunJobWalkTest, WindowsAreNotedAndTheTreeIsWalkedWhole) {
  write_pairs(3, 4);
  JobOptions o = options();
  o.window_files = 2;
  const JobReport report = walk(o);
  EXPECT_TRUE(noted(report, "-B: a walk of the paths has no windows; the tree is read whole"));
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_EQ(report.filesystems[0].windows, 0u);
  EXPECT_EQ(report.filesystems[0].files, 6u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(shares("a" + std::to_string(i), "b" + std::to_string(i)));
}

// Subvolume selection needs the tree reader: refused before anything is read.
TEST_F(RunJobWalkTest, SubvolumeSelectionIsRefused) {
  write_pairs(1, 4);
  JobOptions o = options();
  o.subvolumes.include = {"5"};
  const JobReport report = run(o);
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_EQ(report.path_errors[0],
            "--subvol, --exclude-subvol and --all-subvols need the tree reader (root, on btrfs)");
  EXPECT_TRUE(report.filesystems.empty());
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  EXPECT_NE(report.exit_code(), 0);
}

// Files named one by one (as --fdupes names them): each root is a file walked alone.
TEST_F(RunJobWalkTest, NamedFilesAreWalkedOneByOne) {
  write_pairs(2, 4);
  JobOptions o = options();
  o.paths = {fs.root() + "/a0", fs.root() + "/b0", fs.root() + "/a1"};
  o.partial = false;
  const JobReport report = walk(o);
  ASSERT_EQ(report.filesystems.size(), 1u);
  EXPECT_EQ(report.filesystems[0].files, 3u);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_FALSE(shares("a1", "b1"));
}

// A filesystem without FIDEDUPERANGE that btrdedupe reads is refused by name.
TEST_F(RunJobWalkTest, AnotherFilesystemIsRefusedByName) {
  fs.standing.fs = btrfs::FsKind::Other;
  fs.standing.fs_name = "ext2/ext3";
  write_pairs(1, 4);
  const JobReport report = run(options());
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_EQ(report.path_errors[0],
            fs.root() + " is on ext2/ext3: btrdedupe dedupes on btrfs and XFS");
  EXPECT_EQ(fs.dedupe_calls(), 0u);
}

}  // namespace
}  // namespace btrdedupe::test
