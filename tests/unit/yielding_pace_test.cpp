#include "src/follow/yielding_pace.h"

#include <gtest/gtest.h>

#include "unit/fake_follow_machine.h"

namespace btrdedupe {
namespace {

using test::FakeMachine;

constexpr uint64_t kMiB = 1 << 20;

// Rounds of one second of our own work each, `own` the share of it our I/O stalls others.
void rounds(YieldingPace& pace, FakeMachine& m, int n, double own = 0.0) {
  for (int i = 0; i < n; ++i) {
    pace.before_round(kMiB);
    m.work(1.0, own);
  }
}

TEST(YieldingPace, AQuietMachineNeverPauses) {
  FakeMachine m;
  YieldingPace pace(YieldRules{}, m, m, nullptr);
  rounds(pace, m, 120);
  EXPECT_EQ(pace.figures().pauses, 0u);
  EXPECT_TRUE(m.sleeps.empty());
}

TEST(YieldingPace, OthersStallingPausesTheRoundsUntilTheirWorkEnds) {
  FakeMachine m;
  m.others = [](double t) { return t >= 1010 && t < 1040 ? 0.6 : 0.0; };
  YieldingPace pace(YieldRules{}, m, m, nullptr);
  double paused_at = 0, resumed_at = 0;
  for (int i = 0; i < 60; ++i) {
    const double before = m.now();
    pace.before_round(kMiB);
    if (m.now() - before > 5) paused_at = before, resumed_at = m.now();
    m.work(1.0);
  }
  EXPECT_EQ(pace.figures().pauses, 1u);
  EXPECT_GE(paused_at, 1010);
  EXPECT_LE(paused_at, 1016);   // the first look after the stalls began (every 5 s)
  EXPECT_GE(resumed_at, 1040);
  EXPECT_LE(resumed_at, 1042);  // a probe of 1 s after they ended
  EXPECT_NEAR(pace.figures().paused_seconds, resumed_at - paused_at, 0.01);
}

TEST(YieldingPace, ItsOwnStallsDoNotPauseItAndAreLookedAtLessOften) {
  FakeMachine m;
  YieldingPace pace(YieldRules{}, m, m, nullptr);
  rounds(pace, m, 200, 0.9);   // our rounds keep the disk busy; nobody else runs
  EXPECT_EQ(pace.figures().pauses, 0u);
  // Each look above the limit costs a drain and an idle probe; the looks go from every 5 s
  // to every 40 s: at 5, 15, 35, 75, 115, 155, 195 s, not 40 times in 200 s.
  EXPECT_LE(m.sleeps.size(), 2u * 8);
  EXPECT_LE(m.slept(), 8 * 1.5);
}

TEST(YieldingPace, KeepsToTheReadRate) {
  FakeMachine m;
  YieldRules rules;
  rules.max_read_rate = 10 * kMiB;
  YieldingPace pace(rules, m, m, nullptr);
  for (int i = 0; i < 5; ++i) pace.before_round(10 * kMiB);   // rounds that take no time
  EXPECT_NEAR(m.now() - 1000, 4.0, 0.06);   // the fifth may start once 40 MiB took 4 s
  EXPECT_NEAR(pace.figures().rate_wait_seconds, 4.0, 0.06);
  pace.start_cycle();   // a new cycle counts from its start
  const double t = m.now();
  pace.before_round(10 * kMiB);
  EXPECT_DOUBLE_EQ(m.now(), t);
}

TEST(YieldingPace, AStopEndsAPauseAtOnce) {
  FakeMachine m;
  m.others = [](double) { return 0.9; };   // someone stalls forever
  std::atomic<bool> stop{false};
  m.on_sleep = [&](double t) {
    if (t >= 1030) stop = true;
  };
  YieldingPace pace(YieldRules{}, m, m, &stop);
  rounds(pace, m, 10);
  EXPECT_TRUE(stop.load());
  EXPECT_LT(m.now(), 1045);
  const double t = m.now();
  pace.before_round(kMiB);   // stopped: rounds go on without a look (they end soon)
  EXPECT_DOUBLE_EQ(m.now(), t);
}

TEST(YieldingPace, WaitForQuietHoldsACycleBackWhileOthersStall) {
  FakeMachine m;
  m.others = [](double t) { return t < 1020 ? 0.5 : 0.0; };
  YieldingPace pace(YieldRules{}, m, m, nullptr);
  pace.wait_for_quiet();
  EXPECT_GE(m.now(), 1020);
  EXPECT_LE(m.now(), 1022);
  EXPECT_EQ(pace.figures().pauses, 1u);
  const double t = m.now();
  pace.wait_for_quiet();   // quiet now: a drain and one probe
  EXPECT_NEAR(m.now() - t, 1.5, 0.06);
  EXPECT_EQ(pace.figures().pauses, 1u);
}

TEST(YieldingPace, WithoutPressureInformationItNeverPauses) {
  FakeMachine m;
  m.has_psi = false;
  m.others = [](double) { return 1.0; };
  YieldingPace pace(YieldRules{}, m, m, nullptr);
  rounds(pace, m, 60);
  pace.wait_for_quiet();
  EXPECT_EQ(pace.figures().pauses, 0u);
}

TEST(YieldingPace, NotWatchingStallsItOnlyKeepsTheRate) {
  FakeMachine m;
  m.others = [](double) { return 1.0; };
  YieldRules rules;
  rules.watch_stalls = false;   // --no-yield --max-read-rate=10M
  rules.max_read_rate = 10 * kMiB;
  YieldingPace pace(rules, m, m, nullptr);
  pace.wait_for_quiet();
  for (int i = 0; i < 3; ++i) pace.before_round(10 * kMiB);
  EXPECT_NEAR(m.now() - 1000, 2.0, 0.06);
  EXPECT_EQ(pace.figures().pauses, 0u);
}

}  // namespace
}  // namespace btrdedupe
