#include "src/follow/follow_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace btrdedupe {
namespace {

using ::testing::HasSubstr;

FollowStatus sample() {
  FollowStatus s;
  s.pid = ::getpid();
  s.started = 1'700'000'000;
  s.state = "waiting";
  s.waiting_for = "a change";
  s.cycles = 7;
  s.cycles_with_changes = 3;
  s.bytes_deduped = 5ull << 30;
  s.bytes_freed = 4ull << 30;
  s.files_read = 1234;
  s.last_change_seen = 1'700'000'100;
  s.last_cycle_started = 1'700'000'110;
  s.last_cycle_ended = 1'700'000'120;
  s.last_cycle_seconds = 9.5;
  s.files_settling = 2;
  s.pauses = 4;
  s.paused_seconds = 31.25;
  s.last_error = "/pool/a: Permission denied";
  return s;
}

class FollowStatusFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/btrdedupe-follow-status-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    hashfile_ = dir_ + "/hashes";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // print_follow_status's exit code and what it printed.
  std::pair<int, std::string> print(bool json) {
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    const int rc = print_follow_status(hashfile_, json, true, out, err);
    std::string text;
    for (std::FILE* f : {out, err}) {
      std::rewind(f);
      char buf[512];
      while (std::fgets(buf, sizeof buf, f)) text += buf;
      std::fclose(f);
    }
    return {rc, text};
  }
  void write(const FollowStatus& s) {
    ASSERT_TRUE(write_follow_status(follow_status_path(hashfile_), s));
  }

  std::string dir_, hashfile_;
};

TEST(FollowStatusJson, EveryFieldRoundTrips) {
  const FollowStatus s = sample();
  const auto back = follow_status_from_json(to_json(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(to_json(*back), to_json(s));
  EXPECT_EQ(back->paused_seconds, 31.25);
  EXPECT_EQ(back->last_error, s.last_error);
}

TEST(FollowStatusJson, WhatIsNotAStatusObjectIsRejected) {
  EXPECT_FALSE(follow_status_from_json(""));
  EXPECT_FALSE(follow_status_from_json("{\"cycles\": 3"));
  EXPECT_FALSE(follow_status_from_json("[1, 2]"));
  EXPECT_FALSE(follow_status_from_json("{\"cycles\": \"three\"}"));
  // Fields it does not know (from a newer version) are left alone.
  const auto s = follow_status_from_json("{\"cycles\": 3, \"future\": true}");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cycles, 3u);
}

TEST_F(FollowStatusFile, WrittenWholeBesideTheHashfile) {
  write(sample());
  EXPECT_EQ(follow_status_path(hashfile_), hashfile_ + ".follow");
  EXPECT_FALSE(std::filesystem::exists(follow_status_path(hashfile_) + ".new"));
  auto back = read_follow_status(follow_status_path(hashfile_));
  ASSERT_TRUE(back);
  EXPECT_EQ(to_json(*back), to_json(sample()));
}

TEST_F(FollowStatusFile, NoFollowerYetIsExitOneWithAReason) {
  auto [rc, text] = print(false);
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(text, HasSubstr("no follower has run with this hashfile"));
  EXPECT_THAT(text, HasSubstr(hashfile_ + ".follow"));
}

TEST_F(FollowStatusFile, ARunningFollowerIsExitZero) {
  write(sample());
  auto [rc, text] = print(false);
  EXPECT_EQ(rc, 0);
  EXPECT_THAT(text, HasSubstr("running, pid " + std::to_string(::getpid())));
  EXPECT_THAT(text, HasSubstr("waiting for a change"));
  EXPECT_THAT(text, HasSubstr("7 (3 found changes)"));
  EXPECT_THAT(text, HasSubstr("freed:              4.0 GiB"));
  EXPECT_THAT(text, HasSubstr("settling:           2 files"));
  EXPECT_THAT(text, HasSubstr("4 times, 31 s"));
  EXPECT_THAT(text, HasSubstr("last error:         /pool/a: Permission denied"));
}

TEST_F(FollowStatusFile, AStoppedFollowerIsExitThreeWithItsReason) {
  FollowStatus s = sample();
  s.state = "stopped";
  s.stop_reason = "the filesystem is read-only now";
  write(s);
  auto [rc, text] = print(false);
  EXPECT_EQ(rc, 3);
  EXPECT_THAT(text, HasSubstr("not running"));
  EXPECT_THAT(text, HasSubstr("stopped (the filesystem is read-only now)"));
}

TEST_F(FollowStatusFile, AFollowerWhosePidIsGoneWasKilled) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  FollowStatus s = sample();
  s.pid = child;
  s.state = "cycle";
  write(s);
  auto [rc, json] = print(true);
  EXPECT_EQ(rc, 3);
  const auto back = follow_status_from_json(json);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, "stopped");
  EXPECT_EQ(back->stop_reason, "killed: pid " + std::to_string(child) + " is gone");
  EXPECT_EQ(back->cycles, 7u);
}

}  // namespace
}  // namespace btrdedupe
