// A machine for the follower's unit tests: a clock that moves only when told or slept on,
// and pressure stall totals that grow with the stalls of the time it moved through.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <vector>

#include "src/follow/follow_clock.h"
#include "src/follow/pressure.h"

namespace btrdedupe::test {

class FakeMachine final : public FollowClock, public PressureSource {
 public:
  // Others' stall share (0..1) at time t; none by default.
  std::function<double(double)> others = [](double) { return 0.0; };
  // Called as time passes in sleep(), with the time reached (a test sets flags here).
  std::function<void(double)> on_sleep = [](double) {};
  bool has_psi = true;
  std::vector<double> sleeps;  // each sleep's length asked

  double now() override { return t_; }
  void sleep(double seconds, const std::atomic<bool>* wake) override {
    sleeps.push_back(seconds);
    const double until = t_ + std::max(0.0, seconds);
    while (t_ < until) {
      if (wake && wake->load()) return;
      advance(std::min(kStep, until - t_), 0.0);
      on_sleep(t_);
    }
  }
  std::optional<StallTotals> read() override {
    if (!has_psi) return std::nullopt;
    const auto us = static_cast<uint64_t>(stalled_ * 1e6);
    return StallTotals{us, us / 2};
  }

  // Our own work for `seconds`, stalling the machine `own` of the time (others' too).
  void work(double seconds, double own = 0.0) {
    const double until = t_ + seconds;
    while (t_ < until) advance(std::min(kStep, until - t_), own);
  }
  double slept() const {
    double sum = 0;
    for (double s : sleeps) sum += s;
    return sum;
  }

 private:
  static constexpr double kStep = 0.05;
  void advance(double dt, double own) {
    stalled_ += dt * std::max(own, others(t_));
    t_ += dt;
  }
  double t_ = 1000;
  double stalled_ = 0;
};

}  // namespace btrdedupe::test
