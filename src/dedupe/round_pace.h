// What a dedupe asks before each round: whether to start it now. A follower that yields to
// the machine's real work waits here while others stall on I/O or CPU, or to keep to a read
// rate (src/follow/yielding_pace.h); a run from the command line never waits.
#pragma once

#include <cstdint>

namespace btrdedupe {

// Contract: called from one thread (the round producer), before each round is opened and
// prefetched; it may block. It returns at once once the run's stop flag is set, so a stop
// is never held up by a pause.
class RoundPace {
 public:
  virtual ~RoundPace() = default;
  // `bytes`: what the round will read (its source and every destination range).
  virtual void before_round(uint64_t bytes) = 0;
};

}  // namespace btrdedupe
