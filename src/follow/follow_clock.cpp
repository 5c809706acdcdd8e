#include "src/follow/follow_clock.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "btrfs/fd.h"

namespace btrdedupe {
namespace {

// Written by wake_sleepers() from signal handlers: a sleeper blocks in poll() on it, so an
// idle follower wakes only when its time is up or a signal came (waking every 100 ms to
// look at a flag cost it 2.4 CPU-seconds an hour).
std::atomic<int> g_wake_fd{-1};

class SteadyClock final : public FollowClock {
 public:
  SteadyClock() : wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    g_wake_fd.store(wake_fd_.get());
  }
  double now() override {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  }
  void sleep(double seconds, const std::atomic<bool>* wake) override {
    const double end = now() + seconds;
    for (double left = seconds; left > 0; left = end - now()) {
      if (wake && wake->load()) return;
      if (!wake_fd_.valid()) {  // no eventfd: look at the flag every 100 ms
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, 0.1)));
        continue;
      }
      pollfd p{wake_fd_.get(), POLLIN, 0};
      const int ms = static_cast<int>(std::ceil(std::min(left, 3600.0) * 1000));
      if (::poll(&p, 1, ms) > 0) {
        uint64_t count = 0;
        [[maybe_unused]] const auto n = ::read(wake_fd_.get(), &count, sizeof count);
        return;  // a signal: the caller looks at its flags
      }
    }
  }

 private:
  btrfs::Fd wake_fd_;
};

}  // namespace

FollowClock& steady_clock() {
  static SteadyClock clock;
  return clock;
}

void wake_sleepers() {
  const int fd = g_wake_fd.load();
  if (fd < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
}

}  // namespace btrdedupe
