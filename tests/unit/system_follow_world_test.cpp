// The follower's real world (src/follow/system_follow_world.h) where it needs no btrfs: a
// path that is not (or no longer) the followed filesystem, the status it publishes, the
// runs it makes, and the idle priority it takes.
#include "src/follow/system_follow_world.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include "src/follow/follow_status.h"
#include "src/run/job.h"
#include "unit/real_files.h"

namespace btrdedupe {
namespace {

// The text `f` holds from its start.
std::string text_of(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

FollowStatus some_status() {
  FollowStatus s;
  s.pid = 4242;
  s.started = 1700000000;
  s.state = "waiting";
  s.waiting_for = "a change";
  s.cycles = 3;
  s.cycles_with_changes = 2;
  s.bytes_deduped = 1 << 20;
  s.files_read = 17;
  return s;
}

class SystemFollowWorldTest : public ::testing::Test {
 protected:
  std::string status_path() const { return files_.path("hashfile.follow"); }
  std::unique_ptr<FollowWorld> world(std::FILE* json = nullptr) {
    return follow_world_at(files_.dir, "not-this-fsid", status_path(), json, nullptr);
  }
  test::RealFiles files_;
};

TEST_F(SystemFollowWorldTest, APathNotOnBtrfsIsNoFollowedFilesystem) {
  auto w = system_follow_world(files_.dir, files_.path("hashfile"), nullptr, nullptr);
  EXPECT_FALSE(w);
  auto gone = system_follow_world(files_.path("missing"), files_.path("hashfile"), nullptr, nullptr);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOENT);
}

// After an unmount the path shows the directory below: another filesystem, or none.
TEST_F(SystemFollowWorldTest, ALookAtAnotherFilesystemSaysItWasUnmounted) {
  auto w = world();
  auto marks = w->look();
  ASSERT_FALSE(marks);
  EXPECT_EQ(marks.error().code, ENODEV);
  EXPECT_NE(marks.error().message().find("was unmounted"), std::string::npos)
      << marks.error().message();
  w->commit();  // a transaction of whatever is there: nothing to see, nothing to fail
}

TEST_F(SystemFollowWorldTest, ALookAtAPathGoneSaysSo) {
  const std::string dir = files_.path("followed");
  std::filesystem::create_directory(dir);
  auto w = follow_world_at(dir, "fsid", status_path(), nullptr, nullptr);
  std::filesystem::remove(dir);
  auto marks = w->look();
  ASSERT_FALSE(marks);
  EXPECT_EQ(marks.error().code, ENOENT);
  EXPECT_NE(marks.error().message().find(dir + " is gone"), std::string::npos)
      << marks.error().message();
  w->commit();  // nothing to commit where nothing is
}

TEST_F(SystemFollowWorldTest, PublishWritesTheStatusFileAndAJsonEvent) {
  std::FILE* json = std::tmpfile();
  ASSERT_NE(json, nullptr);
  auto w = world(json);
  const FollowStatus s = some_status();
  w->publish(s);
  auto written = read_follow_status(status_path());
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_EQ(to_json(*written), to_json(s));
  EXPECT_EQ(text_of(json), "{\"event\":\"follow\",\"status\":" + to_json(s) + "}\n");

  FollowStatus later = s;
  later.state = "cycle";
  w->publish(later);
  EXPECT_EQ(to_json(*read_follow_status(status_path())), to_json(later));
  EXPECT_EQ(text_of(json), "{\"event\":\"follow\",\"status\":" + to_json(s) + "}\n" +
                               "{\"event\":\"follow\",\"status\":" + to_json(later) + "}\n");
  std::fclose(json);
}

TEST_F(SystemFollowWorldTest, APublishThatCannotWriteTheStatusStillSendsTheEvent) {
  std::FILE* json = std::tmpfile();
  ASSERT_NE(json, nullptr);
  auto w = follow_world_at(files_.dir, "fsid", files_.path("no/such/dir/status"), json, nullptr);
  w->publish(some_status());
  w->publish(some_status());  // warned once, on stderr
  EXPECT_FALSE(std::filesystem::exists(files_.path("no")));
  const std::string event = "{\"event\":\"follow\",\"status\":" + to_json(some_status()) + "}\n";
  EXPECT_EQ(text_of(json), event + event);
  std::fclose(json);
}

TEST_F(SystemFollowWorldTest, UnixNowIsTheWallClock) {
  auto w = world();
  const int64_t before = ::time(nullptr);
  const int64_t now = w->unix_now();
  EXPECT_GE(now, before);
  EXPECT_LE(now, ::time(nullptr));
}

TEST_F(SystemFollowWorldTest, ARunIsAJobRun) {
  auto w = world();
  JobOptions o;
  o.paths = {files_.path("missing")};
  o.dedupe = true;
  const JobReport report = w->run(o);
  ASSERT_EQ(report.path_errors.size(), 1u);
  EXPECT_NE(report.path_errors[0].find(files_.path("missing")), std::string::npos)
      << report.path_errors[0];
  EXPECT_NE(report.exit_code(), 0);
}

// Linux keeps nice, the scheduling policy and the I/O class per thread: a thread of its
// own takes them here, so the test's process keeps its priority.
TEST(TakeIdlePriority, WhatItDoesNotNameAsMissedIsSet) {
  std::thread([] {
    const std::string missed = take_idle_priority();
    if (missed.find("nice 19") == std::string::npos) {
      errno = 0;
      EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), 19);
    }
    if (missed.find("SCHED_IDLE") == std::string::npos) {
      EXPECT_EQ(::sched_getscheduler(0), SCHED_IDLE);
    }
    if (missed.find("idle I/O class") == std::string::npos) {
      const long prio = ::syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
      EXPECT_EQ(prio >> 13, 3) << "the idle class";
    }
  }).join();
}

}  // namespace
}  // namespace btrdedupe
