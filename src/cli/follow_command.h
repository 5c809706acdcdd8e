// btrdedupe --follow from the command line: the options into a follower, the process's
// priority, the hashfile kept out of the followed tree, and the follower run.
#pragma once

#include <string>

#include "src/cli/cli_options.h"
#include "src/follow/follower.h"
#include "src/report/progress_sink.h"
#include "src/run/job_options.h"

namespace btrdedupe {

// The follower's timing, yielding and per-cycle time box as the command line gives them.
FollowOptions follow_options(const CliOptions& o);

// A hashfile inside the followed tree changes with every cycle it records: left out of
// `job` (with its -journal, -wal, -shm and .follow companions, and only those in the
// hashfile's own directory), so that recording a cycle is never a change for the next one.
// Whatever job.exclude left out before stays left out.
void leave_out_hashfile(JobOptions& job, const std::string& hashfile);

// Returns the exit code (btrdedupe(8), FOLLOW MODE).
int run_follow(const CliOptions& o, JobOptions job, FollowSignals signals, ProgressSink* progress);

}  // namespace btrdedupe
