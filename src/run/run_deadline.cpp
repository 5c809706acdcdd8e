#include "src/run/run_deadline.h"

namespace btrdedupe {

RunDeadline::RunDeadline(double seconds, std::atomic<bool>& stop) : stop_(stop) {
  if (!(seconds > 0)) return;
  if (seconds > 3e8) seconds = 3e8;  // ~10 years: no steady_clock overflow
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  timer_ = std::thread([this, until] {
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, until, [this] { return cancelled_; })) return;
    reached_.store(true);
    stop_.store(true);
  });
}

RunDeadline::~RunDeadline() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
}

}  // namespace btrdedupe
