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

// The machine's steady clock; sleep() looks at `wake` every 100 ms.
FollowClock& steady_clock();

}  // namespace btrdedupe
