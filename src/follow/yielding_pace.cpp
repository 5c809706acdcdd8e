#include "src/follow/yielding_pace.h"

#include <algorithm>

namespace btrdedupe {

YieldingPace::YieldingPace(YieldRules rules, PressureSource& stalls, FollowClock& clock,
                           const std::atomic<bool>* stop)
    : rules_(rules), stalls_(stalls), clock_(clock), stop_(stop), look_every_(rules.look_every) {
  start_cycle();
}

void YieldingPace::start_cycle() {
  rate_from_ = clock_.now();
  bytes_read_ = 0;
  last_.reset();
}

void YieldingPace::before_round(uint64_t bytes) {
  if (stopped()) return;
  keep_rate(bytes);
  look_at_stalls();
}

void YieldingPace::keep_rate(uint64_t bytes) {
  if (rules_.max_read_rate == 0) return;
  const double allowed_at = rate_from_ + double(bytes_read_) / double(rules_.max_read_rate);
  const double wait = allowed_at - clock_.now();
  if (wait > 0) {
    clock_.sleep(wait, stop_);
    figures_.rate_wait_seconds += wait;
  }
  bytes_read_ += bytes;
}

void YieldingPace::look_at_stalls() {
  if (!rules_.watch_stalls) return;
  const double t = clock_.now();
  if (!last_) {
    last_ = stalls_.read();
    last_at_ = t;
    return;
  }
  if (t - last_at_ < look_every_) return;
  const auto now = stalls_.read();
  if (!now) return;
  const double share = stall_share(*last_, *now, t - last_at_);
  if (share > rules_.stall_limit) {
    const bool others = wait_while_stalled();
    look_every_ = others ? rules_.look_every : std::min(look_every_ * 2, rules_.look_every_max);
  }
  last_ = stalls_.read();
  last_at_ = clock_.now();
}

void YieldingPace::wait_for_quiet() {
  if (!rules_.watch_stalls) return;
  if (wait_while_stalled()) look_every_ = rules_.look_every;
  last_.reset();
}

bool YieldingPace::wait_while_stalled() {
  const double from = clock_.now();
  clock_.sleep(rules_.drain, stop_);
  bool stalled = false;
  while (!stopped()) {
    const auto before = stalls_.read();
    const double t = clock_.now();
    clock_.sleep(rules_.probe, stop_);
    const auto after = stalls_.read();
    if (!before || !after || stall_share(*before, *after, clock_.now() - t) <= rules_.stall_limit)
      break;
    if (!stalled) ++figures_.pauses;
    stalled = true;
    pausing_ = true;
  }
  pausing_ = false;
  if (stalled) figures_.paused_seconds += clock_.now() - from;
  return stalled;
}

}  // namespace btrdedupe
