// --max-runtime: a time box for a maintenance window. When the time is up the run's stop
// flag is set, exactly as SIGTERM sets it: no new dedupe round starts, the rounds under way
// finish, the result is confirmed, reported and (with --hashfile) recorded, so the next run
// continues with what is left.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace btrdedupe {

class RunDeadline {
 public:
  // Sets `stop` after `seconds` (from now) unless destroyed first. seconds <= 0: never.
  RunDeadline(double seconds, std::atomic<bool>& stop);
  ~RunDeadline();  // joins the timer thread at once
  RunDeadline(const RunDeadline&) = delete;
  RunDeadline& operator=(const RunDeadline&) = delete;

  // True once the time was up and `stop` was set by this deadline.
  bool reached() const { return reached_.load(); }

 private:
  std::atomic<bool>& stop_;
  std::atomic<bool> reached_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  std::thread timer_;
};

}  // namespace btrdedupe
