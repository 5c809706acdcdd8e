#include "src/follow/change_schedule.h"

#include <algorithm>
#include <cmath>

namespace btrdedupe {

void ChangeSchedule::observe(double now, const ChangeMarks& marks) {
  if (marks == seen_) return;
  const bool was_pending = pending();
  seen_ = marks;
  moved_at_ = now;
  if (!pending()) return;
  if (!was_pending) pending_since_ = now;
  last_change_ = now;
}

void ChangeSchedule::cycle_done(double now, uint64_t at_start, const ChangeMarks& at_end,
                                bool read_changes, std::optional<double> settles_at) {
  woken_ = false;
  settles_at_ = settles_at;
  done_ = read_changes ? at_start : at_end.generation;
  seen_ = at_end;
  moved_at_ = now;
  pending_since_ = now;
}

void ChangeSchedule::cycle_failed(double now, const ChangeMarks& at_end) {
  woken_ = false;
  seen_ = at_end;
  moved_at_ = now;
}

void ChangeSchedule::own_write(const ChangeMarks& after) {
  if (pending()) return;
  done_ = after.generation;
  seen_ = after;
}

NextStep ChangeSchedule::next(double now) const {
  NextStep step;
  step.look_at = now + timing_.poll;
  if (woken_) {
    step.run_cycle = true;
    step.waiting_for = "nothing (woken by SIGHUP)";
    return step;
  }
  if (settles_at_ && now >= *settles_at_) {
    step.run_cycle = true;
    return step;
  }
  if (pending()) {
    const double quiet_at = moved_at_ + timing_.settle;
    if (now >= quiet_at || now >= pending_since_ + timing_.max_wait) {
      step.run_cycle = true;
      return step;
    }
    step.look_at = std::min(step.look_at, quiet_at);
    step.waiting_for = "the filesystem to be quiet for " +
                       std::to_string(static_cast<long>(std::lround(timing_.settle))) + " s";
    return step;
  }
  if (settles_at_) {
    step.look_at = std::min(step.look_at, *settles_at_);
    step.waiting_for = "files written in the last seconds to settle";
    return step;
  }
  step.waiting_for = "a change";
  return step;
}

}  // namespace btrdedupe
