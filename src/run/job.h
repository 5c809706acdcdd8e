// One run of btrdedupe, start to finish: the options (src/run/job_options.h) in, the report
// (src/report/job_report.h) out, progress (src/report/progress_sink.h) on the way. The job
// picks each filesystem's source of batches and runs them (src/run/batch_loop.h).
#pragma once

#include "src/report/job_report.h"
#include "src/report/progress_sink.h"
#include "src/run/job_options.h"

namespace btrdedupe {

class RunWorld;

// On the machine's own filesystems and kernel (machine_world).
JobReport run_job(const JobOptions& options, ProgressSink* progress = nullptr);
// In `world` (src/run/run_world.h): how unit tests run a whole job without root.
JobReport run_job(const JobOptions& options, ProgressSink* progress, RunWorld& world);

}  // namespace btrdedupe
