// A follower's pace: it yields to the machine's real work. Before each dedupe round it
// looks (every few seconds of rounds) at how much the machine's tasks stalled on I/O or
// CPU (src/follow/pressure.h). Above the limit it pauses, lets its own rounds in flight
// drain, and measures again while idle: a stall that stays is someone else's work, and it
// waits until that ends; a stall that goes was its own, and it resumes, looking less often
// (up to look_every_max). It also keeps to a read rate when one is set.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "src/dedupe/round_pace.h"
#include "src/follow/follow_clock.h"
#include "src/follow/pressure.h"

namespace btrdedupe {

struct YieldRules {
  bool watch_stalls = true;    // pause for others' stalls at all (--no-yield: never)
  double stall_limit = 0.2;    // pause while others stall this share of the time (0..1)
  double look_every = 5;       // seconds of rounds between two looks at the stalls
  double look_every_max = 40;  // the longest, once looks found only our own stalls
  double drain = 0.5;          // a pause first waits this long for our rounds in flight
  double probe = 1;            // then measures the stalls over this long, idle
  uint64_t max_read_rate = 0;  // bytes per second the rounds read; 0: no cap
};

struct PaceFigures {
  uint64_t pauses = 0;          // times it found others stalling and waited
  double paused_seconds = 0;    // of those waits
  double rate_wait_seconds = 0; // waits to keep to max_read_rate
};

class YieldingPace final : public RoundPace {
 public:
  // `stop`: a pause ends at once once it is set (nullptr: never).
  YieldingPace(YieldRules rules, PressureSource& stalls, FollowClock& clock,
               const std::atomic<bool>* stop);

  void before_round(uint64_t bytes) override;
  // Before a cycle reads anything: waits while others stall (nothing of ours runs then).
  void wait_for_quiet();
  // A new cycle: the read rate counts from now.
  void start_cycle();
  const PaceFigures& figures() const { return figures_; }
  // Whether it is waiting for others' stalls to end (for a status line).
  bool pausing() const { return pausing_.load(); }

 private:
  void keep_rate(uint64_t bytes);
  void look_at_stalls();
  // Measures idle until the stalls fall to the limit. True when any measure was above it.
  bool wait_while_stalled();
  bool stopped() const { return stop_ && stop_->load(); }

  YieldRules rules_;
  PressureSource& stalls_;
  FollowClock& clock_;
  const std::atomic<bool>* stop_;
  PaceFigures figures_;
  std::atomic<bool> pausing_{false};
  double look_every_;
  std::optional<StallTotals> last_;
  double last_at_ = 0;
  double rate_from_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace btrdedupe
