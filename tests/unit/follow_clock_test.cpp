// The machine's steady clock of the follower (src/follow/follow_clock.h): its sleeps end on
// time, at once when the flag is already set, and early at wake_sleepers().
#include "src/follow/follow_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace btrdedupe {
namespace {

// Seconds of the test's own steady clock around f().
template <class F>
double timed(F f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(SteadyClock, NeverGoesBack) {
  FollowClock& clock = steady_clock();
  double last = clock.now();
  for (int i = 0; i < 1000; ++i) {
    const double t = clock.now();
    EXPECT_GE(t, last);
    last = t;
  }
}

TEST(SteadyClock, SleepsAtLeastTheTimeAsked) {
  FollowClock& clock = steady_clock();
  const double before = clock.now();
  const double took = timed([&] { clock.sleep(0.05); });
  EXPECT_GE(took, 0.049);
  EXPECT_GE(clock.now() - before, 0.049);
  EXPECT_LT(took, 5.0);
}

TEST(SteadyClock, AFlagAlreadySetEndsTheSleepAtOnce) {
  const std::atomic<bool> wake{true};
  EXPECT_LT(timed([&] { steady_clock().sleep(60, &wake); }), 5.0);
}

TEST(SteadyClock, WakeSleepersEndsASleepUnderWay) {
  FollowClock& clock = steady_clock();
  std::thread waker([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    wake_sleepers();
  });
  const std::atomic<bool> flag{false};
  // Whether the wake comes before the sleep starts or during it, the sleep ends early.
  const double took = timed([&] { clock.sleep(60, &flag); });
  waker.join();
  EXPECT_LT(took, 30.0);
  // The wake was taken: the next sleep lasts its time again.
  EXPECT_GE(timed([&] { clock.sleep(0.02); }), 0.019);
}

}  // namespace
}  // namespace btrdedupe
