#include "src/follow/follow_clock.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace btrdedupe {
namespace {

class SteadyClock final : public FollowClock {
 public:
  double now() override {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
  }
  void sleep(double seconds, const std::atomic<bool>* wake) override {
    const double end = now() + seconds;
    for (double left = seconds; left > 0; left = end - now()) {
      if (wake && wake->load()) return;
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, 0.1)));
    }
  }
};

}  // namespace

FollowClock& steady_clock() {
  static SteadyClock clock;
  return clock;
}

}  // namespace btrdedupe
