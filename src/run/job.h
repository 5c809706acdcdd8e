// One run of btrdedupe, start to finish: the options (src/run/job_options.h) in, the report
// (src/report/job_report.h) out, progress (src/report/progress_sink.h) on the way. The job
// picks each filesystem's source of batches and runs them (src/run/batch_loop.h).
#pragma once

#include "src/report/job_report.h"
#include "src/report/progress_sink.h"
#include "src/run/job_options.h"

namespace btrdedupe {

JobReport run_job(const JobOptions& options, ProgressSink* progress = nullptr);

}  // namespace btrdedupe
