// Subvolume selections through run_job without root: --subvol, --all-subvols and
// --exclude-subvol on the in-memory btrfs (tests/unit/memory_btrfs.h), whose one subvolume
// (the top level, mounted at its root) the run's world chooses from and reads whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/run_job_fixture.h"

namespace btrdedupe::test {
namespace {

using ::testing::HasSubstr;

class RunJobSubvolumesTest : public RunJobTest {
 protected:
  JobOptions selecting(SubvolumeSelection selection) const {
    JobOptions o = options();
    o.subvolumes = std::move(selection);
    return o;
  }
};

TEST_F(RunJobSubvolumesTest, ASubvolumeByIdIsReadWholeAndDeduped) {
  write_pairs(2, 8);
  fs.write_file("other", content(900, 4));
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = run(selecting({{"5"}, {}, false}));
  ASSERT_EQ(report.filesystems.size(), 1u);
  const FilesystemReport& r = report.filesystems[0];
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(report.path_errors.empty());
  EXPECT_EQ(report.exit_code(), 0);
  EXPECT_EQ(r.files, 5u);
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_TRUE(shares("a1", "b1"));
  EXPECT_FALSE(shares("a0", "other"));
  EXPECT_EQ(before - fs.referenced_bytes(), 2 * 8 * kBlock);
  EXPECT_EQ(r.freed.bytes, before - fs.referenced_bytes());
  EXPECT_EQ(report.options.subvolumes.include, (std::vector<std::string>{"5"}));
}

// --all-subvols, and a subvolume named by its top directory: the words are ids as run.
TEST_F(RunJobSubvolumesTest, AllSubvolsAndPathsNameTheSameSubvolume) {
  write_pairs(1, 8);
  const JobReport all = run(selecting({{}, {}, true}));
  ASSERT_EQ(all.filesystems.size(), 1u);
  EXPECT_EQ(all.filesystems[0].error, "");
  EXPECT_TRUE(all.notes.empty());
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_EQ(all.filesystems[0].freed.bytes, 8 * kBlock);

  fs.write_file("c", content(700, 4));
  fs.write_file("d", content(700, 4));
  const JobReport by_path = run(selecting({{fs.root()}, {}, false}));
  ASSERT_EQ(by_path.filesystems.size(), 1u);
  EXPECT_EQ(by_path.options.subvolumes.include, (std::vector<std::string>{"5"}));
  EXPECT_TRUE(shares("c", "d"));
  EXPECT_EQ(by_path.filesystems[0].freed.bytes, 4 * kBlock);
}

TEST_F(RunJobSubvolumesTest, NothingLeftToScanIsAnError) {
  write_pairs(1, 4);
  const JobReport report = run(selecting({{}, {"5"}, true}));
  EXPECT_TRUE(report.filesystems.empty());
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_EQ(report.path_errors[0], "no subvolume left to scan on the filesystem of " + fs.root());
  EXPECT_EQ(report.options.subvolumes.exclude, (std::vector<std::string>{"5"}));
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  EXPECT_NE(report.exit_code(), 0);
}

TEST_F(RunJobSubvolumesTest, AWordOfNoSubvolumeRunsNothing) {
  write_pairs(1, 4);
  const JobReport unknown = run(selecting({{"7"}, {}, false}));
  EXPECT_TRUE(unknown.filesystems.empty());
  ASSERT_EQ(unknown.path_errors.size(), 1u);
  EXPECT_THAT(unknown.path_errors[0], HasSubstr("--subvol 7: no subvolume with id 7"));
  const JobReport inside = run(selecting({{fs.root() + "/a0"}, {}, false}));
  ASSERT_EQ(inside.path_errors.size(), 1u);
  EXPECT_THAT(inside.path_errors[0], HasSubstr("is not the top directory of a subvolume"));
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  EXPECT_FALSE(shares("a0", "b0"));
}

}  // namespace
}  // namespace btrdedupe::test
