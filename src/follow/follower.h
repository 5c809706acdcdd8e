// btrdedupe --follow: a first pass like any run, then cycles for as long as it runs. Each
// cycle is a run of the job on its hashfile (src/run/job.h), so the job picks the source of
// batches as for any re-run: what changed since the recorded generations, or the trees
// whole when new subvolumes appeared. When a cycle starts is ChangeSchedule's rule; how
// fast its rounds go is YieldingPace's; what it has done is FollowStatus.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>

#include "btrfs/result.h"
#include "src/follow/change_schedule.h"
#include "src/follow/follow_clock.h"
#include "src/follow/follow_status.h"
#include "src/follow/yielding_pace.h"
#include "src/report/job_report.h"
#include "src/run/job_options.h"

namespace btrdedupe {

struct FollowOptions {
  FollowTiming timing;
  YieldRules yield;
  double cycle_runtime = 0;     // --max-runtime: a time box for each cycle; 0: none
  bool quiet = false;           // no line per cycle
};

// What the follower sees of the machine: behind one interface so that its cycles are
// tested without a filesystem (tests/unit/follower_test.cpp).
class FollowWorld {
 public:
  virtual ~FollowWorld() = default;
  // A look at the followed filesystem. An error ends the follower: the filesystem is gone
  // (unmounted), or read-only now.
  virtual btrfs::Result<ChangeMarks> look() = 0;
  // Commits the filesystem's transaction (syncfs): after a cycle, so that a write that
  // comes next starts a new one, which moves the generation.
  virtual void commit() = 0;
  // One run of `options` (run_job).
  virtual JobReport run(const JobOptions& options) = 0;
  // Each change of the follower's status (the status file, --progress=json).
  virtual void publish(const FollowStatus& status) = 0;
  // Unix seconds now.
  virtual int64_t unix_now() = 0;
};

// Set by the signal handlers: `stop` ends the follower after the rounds under way (SIGINT,
// SIGTERM), `cycle_stop` ends the cycle (set with stop, and by --max-runtime), `wake`
// starts a cycle now (SIGHUP).
struct FollowSignals {
  const std::atomic<bool>& stop;
  std::atomic<bool>& cycle_stop;
  std::atomic<bool>& wake;
};

// Runs `job` (a dedupe with a hashfile) as a follower until a signal or an error ends it.
// Returns the exit code (btrdedupe(8)): 0 after a stop on a signal, 1 when the filesystem
// went away or read-only, or the first pass could not run.
int follow(const JobOptions& job, const FollowOptions& options, FollowWorld& world,
           FollowClock& clock, PressureSource& stalls, FollowSignals signals, std::FILE* out);

}  // namespace btrdedupe
