#include "src/follow/follower.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "src/report/exit_codes.h"
#include "unit/fake_follow_machine.h"

namespace btrdedupe {
namespace {

using test::FakeMachine;
using ::testing::HasSubstr;

// What a cycle's run found, as its report tells the follower.
struct CycleResult {
  uint64_t files_read = 0, freed = 0, settling = 0;
  int64_t settled_at = 0;
  bool reached_fs = true;
};

// The follower's world, on a FakeMachine's clock: a filesystem whose generation moves when
// the test writes to it, and runs that answer as the test says.
class FakeWorld final : public FollowWorld {
 public:
  explicit FakeWorld(FakeMachine& m) : m_(m) {}

  uint64_t generation = 10;
  bool status_moves_generation = false;   // publish() writes on the followed filesystem
  double gone_at = 1e18;   // from then on, look() fails as if unmounted
  std::function<CycleResult(int cycle)> answer = [](int) { return CycleResult{}; };
  std::vector<JobOptions> runs;
  std::vector<double> run_times;
  std::vector<FollowStatus> published;
  int looks = 0, commits = 0;

  btrfs::Result<ChangeMarks> look() override {
    ++looks;
    if (m_.now() >= gone_at) return btrfs::Error{ENOENT, "/pool: unmounted"};
    return ChangeMarks{generation, 0};
  }
  void commit() override { ++commits; }
  JobReport run(const JobOptions& options) override {
    runs.push_back(options);
    run_times.push_back(m_.now());
    const CycleResult r = answer(int(runs.size()) - 1);
    m_.work(2.0);
    JobReport report;
    if (!r.reached_fs) {
      report.path_errors.push_back("/pool/hashfile: database is locked");
      return report;
    }
    FilesystemReport fs;
    fs.files = 100;
    fs.catalog.unchanged = r.files_read == 0 && r.settling == 0;
    fs.catalog.files_changed = r.files_read;
    fs.catalog.files_settling = r.settling;
    fs.catalog.settled_at = r.settled_at;
    fs.freed.bytes = r.freed;
    fs.dedupe.bytes_deduped = r.freed;
    report.filesystems.push_back(fs);
    return report;
  }
  void publish(const FollowStatus& status) override {
    published.push_back(status);
    if (status_moves_generation) ++generation;
  }
  int64_t unix_now() override { return 1'700'000'000 + int64_t(m_.now()); }

 private:
  FakeMachine& m_;
};

struct Follow {
  FakeMachine m;
  FakeWorld world{m};
  std::atomic<bool> stop{false}, cycle_stop{false}, wake{false};
  JobOptions job;
  FollowOptions options;
  std::function<void(double)> at = [](double) {};   // the test's doings as time passes
  bool wrote = false;
  std::FILE* out = std::tmpfile();

  Follow() {
    m.on_sleep = [this](double t) { at(t); };
  }
  ~Follow() { std::fclose(out); }
  int run() {
    return follow(job, options, world, m, m, FollowSignals{stop, cycle_stop, wake}, out);
  }
  const FollowStatus& last() const { return world.published.back(); }
};

TEST(Follower, AFirstPassThenACycleOnceNewDataSettled) {
  Follow f;
  f.world.answer = [](int cycle) {
    return cycle == 1 ? CycleResult{.files_read = 3, .freed = 1 << 20} : CycleResult{};
  };
  f.at = [&](double t) {
    if (t >= 1030 && f.world.generation == 10) f.world.generation = 11;   // a copy lands
    if (t >= 1200) f.stop = true;
  };
  EXPECT_EQ(f.run(), kExitOk);
  ASSERT_EQ(f.world.runs.size(), 2u);
  EXPECT_EQ(f.world.runs[0].settle_seconds, 0);   // the first pass reads everything
  EXPECT_EQ(f.world.runs[1].settle_seconds, 15);
  EXPECT_NE(f.world.runs[1].pace, nullptr);
  EXPECT_EQ(f.world.runs[1].stop, &f.cycle_stop);
  // Seen within a poll, then 15 s of standing still, then a 1.5 s look at the stalls.
  EXPECT_GE(f.world.run_times[1], 1045);
  EXPECT_LE(f.world.run_times[1], 1052);
  // A commit after each run and after each status write while waiting.
  const auto waits = std::count_if(f.world.published.begin(), f.world.published.end(),
                                   [](const FollowStatus& s) { return s.state == "waiting"; });
  EXPECT_EQ(f.world.commits, 2 + waits);
  EXPECT_EQ(f.last().state, "stopped");
  EXPECT_EQ(f.last().stop_reason, "stopped on a signal");
  EXPECT_EQ(f.last().cycles, 2u);
  EXPECT_EQ(f.last().cycles_with_changes, 1u);
  EXPECT_EQ(f.last().bytes_freed, 1u << 20);
  EXPECT_EQ(f.last().files_read, 3u);
  // Seen at the first look after it: within a poll.
  EXPECT_GE(f.last().last_change_seen, 1'700'000'000 + 1030);
  EXPECT_LE(f.last().last_change_seen, 1'700'000'000 + 1035);
}

TEST(Follower, NothingChangingCostsALookPerPollAndNoRun) {
  Follow f;
  f.at = [&](double t) { f.stop = t >= 1000 + 3600; };
  EXPECT_EQ(f.run(), kExitOk);
  EXPECT_EQ(f.world.runs.size(), 1u);
  EXPECT_NEAR(f.world.looks, 3600 / 5, 3);
  EXPECT_EQ(f.last().cycles, 1u);
}

TEST(Follower, ACyclesOwnTransactionIsNotAChangeWhenItReadNothing) {
  Follow f;
  f.world.answer = [&](int) {
    ++f.world.generation;   // its hashfile and dedupe write in a transaction of their own
    return CycleResult{};
  };
  f.at = [&](double t) { f.stop = t >= 1600; };
  EXPECT_EQ(f.run(), kExitOk);
  EXPECT_EQ(f.world.runs.size(), 1u);
}

TEST(Follower, AnUnmountedFilesystemStopsItWithExitOne) {
  Follow f;
  f.world.gone_at = 1040;
  testing::internal::CaptureStderr();
  EXPECT_EQ(f.run(), kExitError);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("follower stops: /pool: unmounted"));
  EXPECT_EQ(f.last().state, "stopped");
  EXPECT_THAT(f.last().stop_reason, HasSubstr("unmounted"));
  EXPECT_LE(f.m.now(), 1046);
}

TEST(Follower, AFirstPassThatReachedNoFilesystemStopsIt) {
  Follow f;
  f.world.answer = [](int) { return CycleResult{.reached_fs = false}; };
  testing::internal::CaptureStderr();
  EXPECT_EQ(f.run(), kExitError);
  EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("database is locked"));
  EXPECT_THAT(f.last().stop_reason, HasSubstr("the first pass failed"));
  EXPECT_EQ(f.world.runs.size(), 1u);
}

TEST(Follower, ACycleThatCouldNotRunLeavesItsChangesForTheNext) {
  Follow f;
  f.world.answer = [](int cycle) {
    if (cycle == 1) return CycleResult{.reached_fs = false};
    return cycle == 2 ? CycleResult{.files_read = 5, .freed = 4096} : CycleResult{};
  };
  f.at = [&](double t) {
    if (t >= 1030 && f.world.generation == 10) f.world.generation = 11;
    f.stop = t >= 1300;
  };
  testing::internal::CaptureStderr();
  EXPECT_EQ(f.run(), kExitOk);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(f.world.runs.size(), 3u);
  EXPECT_EQ(f.last().files_read, 5u);
  EXPECT_EQ(f.last().last_error, "/pool/hashfile: database is locked");
}

TEST(Follower, FilesLeftToSettleGetACycleWhenTheySettle) {
  Follow f;
  f.world.answer = [&](int cycle) {
    if (cycle == 1)   // a file written 5 s before the cycle: it settles 10 s later
      return CycleResult{.files_read = 1, .settling = 1,
                         .settled_at = f.world.unix_now() + 60};
    return cycle == 2 ? CycleResult{.files_read = 1} : CycleResult{};
  };
  f.at = [&](double t) {
    if (t >= 1030 && f.world.generation == 10) f.world.generation = 11;
    f.stop = t >= 1300;
  };
  EXPECT_EQ(f.run(), kExitOk);
  ASSERT_EQ(f.world.runs.size(), 3u);
  // Cycle 1 started t0 and took 2 s; the file settles at t0 + 60.
  EXPECT_NEAR(f.world.run_times[2] - f.world.run_times[1], 60, 6);
}

TEST(Follower, SighupRunsACycleAtOnce) {
  Follow f;
  bool woke = false;
  f.at = [&](double t) {
    if (t >= 1100 && !woke) f.wake = woke = true;
    f.stop = t >= 1200;
  };
  EXPECT_EQ(f.run(), kExitOk);
  ASSERT_EQ(f.world.runs.size(), 2u);
  EXPECT_NEAR(f.world.run_times[1], 1100, 2);
}

TEST(Follower, NoYieldAndNoRateCapRunsRoundsWithoutAPace) {
  Follow f;
  f.options.yield.watch_stalls = false;
  f.at = [&](double t) {
    if (t >= 1030 && f.world.generation == 10) f.world.generation = 11;
    f.stop = t >= 1100;
  };
  EXPECT_EQ(f.run(), kExitOk);
  ASSERT_EQ(f.world.runs.size(), 2u);
  EXPECT_EQ(f.world.runs[1].pace, nullptr);
}

TEST(Follower, PrintsALinePerCycleThatReadChanges) {
  Follow f;
  f.world.answer = [](int cycle) {
    return cycle == 1 ? CycleResult{.files_read = 3, .freed = 1 << 20} : CycleResult{};
  };
  f.at = [&](double t) {
    if (t >= 1030 && f.world.generation == 10) f.world.generation = 11;
    f.stop = t >= 1100;
  };
  EXPECT_EQ(f.run(), kExitOk);
  std::rewind(f.out);
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof line, f.out), nullptr);
  EXPECT_THAT(line, HasSubstr("cycle 2: 3 files read"));
  EXPECT_EQ(std::fgets(line, sizeof line, f.out), nullptr);   // the first pass read none
}

TEST(Follower, MaxRuntimeEndsACycleNotTheFollower) {
  Follow f;
  f.options.cycle_runtime = 0.05;   // real seconds: RunDeadline is a timer thread
  std::vector<bool> stopped;
  f.world.answer = [&](int) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    const std::atomic<bool>* stop = f.world.runs.back().stop;
    while (!stop->load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stopped.push_back(stop->load());
    return CycleResult{.files_read = 1};
  };
  f.at = [&](double t) {
    if (t >= 1030 && f.world.generation == 10) f.world.generation = 11;
    f.stop = t >= 1100;
  };
  EXPECT_EQ(f.run(), kExitOk);
  ASSERT_GE(stopped.size(), 2u);
  EXPECT_TRUE(stopped[0]);   // the first pass's time box ended it...
  EXPECT_TRUE(stopped[1]);   // ...and the next cycle got a time box of its own
}

TEST(Follower, ItsStatusWritesOnTheFollowedFilesystemBringNoCycles) {
  Follow f;
  f.world.status_moves_generation = true;   // the hashfile and its status lie on it
  f.world.answer = [&](int cycle) {
    return cycle == 1 ? CycleResult{.files_read = 3, .freed = 1 << 20} : CycleResult{};
  };
  f.at = [&](double t) {
    if (t >= 1030 && !f.wrote) f.world.generation += 1, f.wrote = true;   // a copy lands
    f.stop = t >= 1000 + 3600;
  };
  EXPECT_EQ(f.run(), kExitOk);
  // The first pass, the copy's cycle, and the one look after it at what landed meanwhile.
  EXPECT_EQ(f.world.runs.size(), 3u);
}

}  // namespace
}  // namespace btrdedupe
