// btrdedupe --follow from the command line: the options into a follower, the process's
// priority, the hashfile kept out of the followed tree, and the follower run.
#pragma once

#include "src/cli/cli_options.h"
#include "src/follow/follower.h"
#include "src/report/progress_sink.h"
#include "src/run/job_options.h"

namespace btrdedupe {

// Returns the exit code (btrdedupe(8), FOLLOW MODE).
int run_follow(const CliOptions& o, JobOptions job, FollowSignals signals, ProgressSink* progress);

}  // namespace btrdedupe
