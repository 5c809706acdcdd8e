#include "src/follow/change_schedule.h"

#include <gtest/gtest.h>

namespace btrdedupe {
namespace {

constexpr FollowTiming kTiming{.settle = 15, .poll = 5, .max_wait = 300};

// A schedule whose first pass ran from t=0 to t=10 and saw generation 100.
ChangeSchedule after_first_pass() {
  ChangeSchedule s(kTiming);
  s.cycle_done(10, 100, {.generation = 100, .reserved = 0}, true, std::nullopt);
  s.observe(10, {.generation = 100, .reserved = 0});
  return s;
}

TEST(ChangeSchedule, NothingChangedMeansNoCycleAndALookEveryPoll) {
  ChangeSchedule s = after_first_pass();
  s.observe(15, {100, 0});
  const NextStep step = s.next(15);
  EXPECT_FALSE(step.run_cycle);
  EXPECT_DOUBLE_EQ(step.look_at, 20);
  EXPECT_EQ(step.waiting_for, "a change");
  EXPECT_FALSE(s.last_change().has_value());
}

TEST(ChangeSchedule, AChangeRunsACycleOnceItStoodStillForSettleSeconds) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 4096});
  EXPECT_EQ(s.last_change(), 20);
  NextStep step = s.next(20);
  EXPECT_FALSE(step.run_cycle);
  EXPECT_EQ(step.waiting_for, "the filesystem to be quiet for 15 s");
  s.observe(25, {101, 4096});
  s.observe(30, {101, 4096});
  EXPECT_FALSE(s.next(34.9).run_cycle);
  EXPECT_TRUE(s.next(35).run_cycle);
}

TEST(ChangeSchedule, ReservedSpaceMovingInOneTransactionDefersTheCycle) {
  // A copy that writes into the same transaction leaves the generation alone.
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 4096});
  s.observe(30, {101, 1 << 20});
  EXPECT_FALSE(s.next(40).run_cycle);   // 20 + 15 passed, but it moved at 30
  EXPECT_TRUE(s.next(45).run_cycle);
}

TEST(ChangeSchedule, LooksAgainWhenTheSettleEndsIfThatComesBeforeThePoll) {
  ChangeSchedule s(FollowTiming{.settle = 2, .poll = 5, .max_wait = 300});
  s.cycle_done(0, 7, {7, 0}, false, std::nullopt);
  s.observe(1, {8, 0});
  EXPECT_DOUBLE_EQ(s.next(1).look_at, 3);
}

TEST(ChangeSchedule, AFilesystemNeverQuietGetsACycleAfterMaxWait) {
  ChangeSchedule s = after_first_pass();
  uint64_t gen = 100;
  double t = 20;
  for (; t <= 400; t += 5) {
    s.observe(t, {++gen, 0});
    if (s.next(t).run_cycle) break;
  }
  EXPECT_DOUBLE_EQ(t, 320);   // first seen pending at 20, 300 s of never standing still
}

TEST(ChangeSchedule, ACycleThatReadChangesLooksAgainAtWhatLandedMeanwhile) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 0});
  ASSERT_TRUE(s.next(35).run_cycle);
  // The cycle began at generation 101 and, while it ran, the filesystem went to 104 (its
  // own dedupe among them: a follow-up cycle cannot tell whose they were).
  s.cycle_done(60, 101, {104, 0}, true, std::nullopt);
  EXPECT_FALSE(s.next(60).run_cycle);
  EXPECT_TRUE(s.next(75).run_cycle);
}

TEST(ChangeSchedule, ACycleThatFoundNothingToReadEndsTheChanges) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 0});
  ASSERT_TRUE(s.next(35).run_cycle);
  s.cycle_done(36, 101, {102, 0}, false, std::nullopt);   // its own commit moved it
  s.observe(41, {102, 0});
  EXPECT_FALSE(s.next(100).run_cycle);
  EXPECT_EQ(s.next(100).waiting_for, "a change");
}

TEST(ChangeSchedule, FilesLeftToSettleBringACycleWhenTheySettle) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 0});
  s.cycle_done(36, 101, {101, 0}, false, 50.0);
  NextStep step = s.next(40);
  EXPECT_FALSE(step.run_cycle);
  EXPECT_EQ(step.waiting_for, "files written in the last seconds to settle");
  EXPECT_DOUBLE_EQ(s.next(48).look_at, 50);
  EXPECT_TRUE(s.next(50).run_cycle);
  s.cycle_done(52, 101, {101, 0}, false, std::nullopt);
  EXPECT_FALSE(s.next(60).run_cycle);
}

TEST(ChangeSchedule, SighupStartsACycleNowAndTheCycleClearsIt) {
  ChangeSchedule s = after_first_pass();
  s.wake();
  EXPECT_TRUE(s.next(11).run_cycle);
  s.cycle_done(12, 100, {100, 0}, false, std::nullopt);
  EXPECT_FALSE(s.next(13).run_cycle);
}

TEST(ChangeSchedule, ASecondChangeWhilePendingKeepsTheOldestWaitTime) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 0});
  s.observe(200, {102, 0});
  EXPECT_EQ(s.last_change(), 200);
  EXPECT_FALSE(s.next(214).run_cycle);
  EXPECT_TRUE(s.next(215).run_cycle);
}

TEST(ChangeSchedule, ACycleThatCouldNotRunKeepsItsChangesPending) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 0});
  ASSERT_TRUE(s.next(35).run_cycle);
  s.cycle_failed(36, {101, 0});   // the hashfile was held by another run
  EXPECT_FALSE(s.next(40).run_cycle);
  EXPECT_TRUE(s.next(51).run_cycle);
}

TEST(ChangeSchedule, ItsOwnStatusWriteIsNotAChange) {
  ChangeSchedule s = after_first_pass();
  s.own_write({101, 0});   // the status file beside a hashfile on the followed filesystem
  s.observe(20, {101, 0});
  EXPECT_FALSE(s.next(100).run_cycle);
  EXPECT_EQ(s.next(100).waiting_for, "a change");
}

TEST(ChangeSchedule, ItsOwnWriteLeavesAChangeThatWasPendingPending) {
  ChangeSchedule s = after_first_pass();
  s.observe(20, {101, 0});
  s.own_write({102, 0});
  EXPECT_TRUE(s.next(40).run_cycle);
}

}  // namespace
}  // namespace btrdedupe
