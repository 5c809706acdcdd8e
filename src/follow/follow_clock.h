// The follower's time: a seam, so its cycle rules and pauses are tested without waiting.
#pragma once

#include <atomic>

namespace btrdedupe {

// Contract: now() never goes back (a steady clock, in seconds from any origin).
class FollowClock {
 public:
  virtual ~FollowClock() = default;
  virtual double now() = 0;
  // Sleeps `seconds`, or less: it returns early once `wake` is set (when given).
  virtual void sleep(double seconds, const std::atomic<bool>* wake = nullptr) = 0;
};

// The machine's steady clock. Its sleep() ends early at wake_sleepers() (the caller then
// looks at its flags again), and the first call must come before any signal handler that
// calls wake_sleepers() is installed.
FollowClock& steady_clock();

// Async-signal-safe: ends steady_clock()'s sleeps under way (one of them, at least).
void wake_sleepers();

}  // namespace btrdedupe
