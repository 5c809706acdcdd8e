// --follow from the command line without a filesystem to follow: its options as the
// follower gets them, and the hashfile kept out of the followed tree.
#include "src/cli/follow_command.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

namespace btrdedupe {
namespace {

CliOptions parsed(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"btrdedupe"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ParsedCli p = parse_cli(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(p.error, "");
  return p.options;
}

TEST(FollowCommand, TheFollowerGetsTheOptionsAsGiven) {
  const FollowOptions f =
      follow_options(parsed({"--follow", "--hashfile=h", "--settle=2m", "--poll-interval=7s",
                             "--stall-limit=35", "--max-read-rate=4M", "--max-runtime=90", "-q",
                             "/a"}));
  EXPECT_EQ(f.timing.settle, 120);
  EXPECT_EQ(f.timing.poll, 7);
  EXPECT_DOUBLE_EQ(f.yield.stall_limit, 0.35);
  EXPECT_EQ(f.yield.max_read_rate, 4u << 20);
  EXPECT_TRUE(f.yield.watch_stalls);
  EXPECT_EQ(f.cycle_runtime, 90);
  EXPECT_TRUE(f.quiet);

  const FollowOptions plain =
      follow_options(parsed({"--follow", "--hashfile=h", "--no-yield", "/a"}));
  EXPECT_FALSE(plain.yield.watch_stalls);
  EXPECT_FALSE(plain.quiet);
  EXPECT_EQ(plain.cycle_runtime, 0);
  EXPECT_EQ(plain.yield.max_read_rate, 0u);
}

// A followed tree in a directory of its own, the hashfile in its subdirectory "db".
class LeaveOutHashfileTest : public ::testing::Test {
 protected:
  LeaveOutHashfileTest() {
    std::string pattern = (std::filesystem::temp_directory_path() / "follow-XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
    top_ = pattern;
    std::filesystem::create_directories(top_ + "/tree/db");
    std::filesystem::create_directories(top_ + "/tree/other");
    std::filesystem::create_directory_symlink(top_ + "/tree", top_ + "/link");
  }
  ~LeaveOutHashfileTest() override { std::filesystem::remove_all(top_); }

  std::string tree() const { return top_ + "/tree"; }
  std::string top_;
};

TEST_F(LeaveOutHashfileTest, TheHashfileAndItsCompanionsAreLeftOutOnlyWhereTheyAre) {
  JobOptions job;
  leave_out_hashfile(job, tree() + "/db/../db/h.sqlite");
  ASSERT_TRUE(job.exclude);
  for (const char* own : {"db/h.sqlite", "db/h.sqlite-journal", "db/h.sqlite-wal",
                          "db/h.sqlite-shm", "db/h.sqlite.follow", "db/h.sqlite.follow.new"})
    EXPECT_TRUE(job.exclude(tree(), own)) << own;
  // The same names elsewhere, and other names beside it, are the tree's own files.
  for (const char* theirs : {"other/h.sqlite", "h.sqlite", "db/h.sqlite.bak", "db/h.sqlit",
                             "db/data", "db"})
    EXPECT_FALSE(job.exclude(tree(), theirs)) << theirs;
  // A root named through a symbolic link is the same directory.
  EXPECT_TRUE(job.exclude(top_ + "/link", "db/h.sqlite-wal"));
  // The hashfile itself given as the root's relative path: the root is its directory.
  EXPECT_TRUE(job.exclude(tree() + "/db", "h.sqlite"));
  EXPECT_FALSE(job.exclude(tree() + "/other", "h.sqlite"));
}

TEST_F(LeaveOutHashfileTest, WhatWasLeftOutBeforeStaysLeftOut) {
  JobOptions job;
  std::vector<std::string> asked;
  job.exclude = [&](const std::string&, const std::string& relative) {
    asked.push_back(relative);
    return relative == "cache";
  };
  leave_out_hashfile(job, tree() + "/h.sqlite");
  EXPECT_TRUE(job.exclude(tree(), "cache"));
  EXPECT_TRUE(job.exclude(tree(), "h.sqlite-shm"));
  EXPECT_FALSE(job.exclude(tree(), "data"));
  EXPECT_EQ(asked, (std::vector<std::string>{"cache", "h.sqlite-shm", "data"}));
}

}  // namespace
}  // namespace btrdedupe
