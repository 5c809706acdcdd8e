// A job's subvolume options resolved before anything is read (src/run/job_selection.h), on
// a made-up machine (tests/unit/made_up_mounts.h): one filesystem for all its paths, the
// words rewritten as ids, and what cannot be chosen said in the report.
#include "src/run/job_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/made_up_mounts.h"

namespace btrdedupe::test {
namespace {

using ::testing::HasSubstr;

btrfs::Subvolume subvolume(uint64_t id, const std::string& path) {
  btrfs::Subvolume s;
  s.id = id;
  s.path = path;
  return s;
}

class JobSelectionTest : public ::testing::Test {
 protected:
  JobSelectionTest() {
    const std::string fsid = machine.add_filesystem(
        7, {subvolume(5, ""), subvolume(256, "data"), subvolume(257, "data/cache"),
            subvolume(258, "archive")});
    machine.mount("/srv", fsid, 256);
    machine.mount("/mnt/pool", fsid, 5);
    machine.mount("/mnt/other", machine.add_filesystem(8, {subvolume(5, "")}), 5);
    machine.mount_other("/tmp", "tmpfs");
  }
  JobOptions options(std::vector<std::string> paths, SubvolumeSelection selection) const {
    JobOptions o;
    o.paths = std::move(paths);
    o.subvolumes = std::move(selection);
    return o;
  }

  MadeUpMounts machine;
  JobReport report;
};

TEST_F(JobSelectionTest, WordsBecomeIds) {
  JobOptions o = options({"/srv", "/mnt/pool/archive"}, {{"/srv/cache", "258"}, {"/srv"}, false});
  const auto r = select_subvolumes(o, report, machine);
  ASSERT_TRUE(r.has_value()) << (report.path_errors.empty() ? "" : report.path_errors[0]);
  EXPECT_EQ(o.subvolumes.include, (std::vector<std::string>{"257", "258"}));
  EXPECT_EQ(o.subvolumes.exclude, (std::vector<std::string>{"256"}));
  ASSERT_EQ(r->roots.size(), 2u);
  EXPECT_EQ(r->roots[0].path, "/srv/cache");
  EXPECT_EQ(r->roots[1].path, "/mnt/pool/archive");
  EXPECT_TRUE(report.path_errors.empty());
  EXPECT_TRUE(report.notes.empty());
}

TEST_F(JobSelectionTest, WhatIsLeftOutGoesToTheReport) {
  machine.mount("/mnt/pool", machine.add_filesystem(9, {subvolume(5, "")}), 5);  // hides it
  JobOptions o = options({"/srv"}, {{"258"}, {}, true});
  const auto r = select_subvolumes(o, report, machine);
  ASSERT_TRUE(r.has_value());
  std::vector<uint64_t> roots;
  for (const auto& root : r->roots) roots.push_back(root.id);
  EXPECT_EQ(roots, (std::vector<uint64_t>{256, 257}));
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_THAT(report.path_errors[0], HasSubstr("subvolume 258 (archive) is not reachable"));
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_THAT(report.notes[0], HasSubstr("subvolume 5 (<top level>) is not reachable"));
}

TEST_F(JobSelectionTest, SubvolumeOptionsWorkOnOneFilesystem) {
  JobOptions none = options({}, {{"256"}, {}, false});
  EXPECT_FALSE(select_subvolumes(none, report, machine).has_value());
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_EQ(report.path_errors[0], "subvolume options need a PATH on the filesystem");

  JobOptions two = options({"/srv", "/mnt/other"}, {{"256"}, {}, false});
  EXPECT_FALSE(select_subvolumes(two, report, machine).has_value());
  ASSERT_EQ(report.path_errors.size(), 2u);
  EXPECT_EQ(report.path_errors[1],
            "--subvol, --exclude-subvol and --all-subvols work on one filesystem: /mnt/other "
            "is not on the filesystem of /srv");

  JobOptions tmp = options({"/srv", "/tmp/x"}, {{}, {"256"}, false});
  EXPECT_FALSE(select_subvolumes(tmp, report, machine).has_value());
  ASSERT_EQ(report.path_errors.size(), 3u);
  EXPECT_EQ(report.path_errors[2], "/tmp/x is on tmpfs, not btrfs");
  EXPECT_EQ(tmp.subvolumes.exclude, (std::vector<std::string>{"256"}));  // untouched
}

TEST_F(JobSelectionTest, AWordOfNoSubvolumeEndsTheJob) {
  JobOptions o = options({"/srv"}, {{"/srv/missing"}, {}, false});
  EXPECT_FALSE(select_subvolumes(o, report, machine).has_value());
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_THAT(report.path_errors[0], HasSubstr("--subvol /srv/missing: "));
  EXPECT_EQ(o.subvolumes.include, (std::vector<std::string>{"/srv/missing"}));
}

}  // namespace
}  // namespace btrdedupe::test
