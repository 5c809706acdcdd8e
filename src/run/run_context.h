// What every stage of a run reaches: the options as resolved, where progress goes, and the
// filesystem beyond its tree reads (src/run/run_kernel.h). One value, made by the job and
// passed down, so a test sets each of them for the whole run.
#pragma once

#include <cstdint>

#include "src/report/progress_sink.h"
#include "src/run/job_options.h"
#include "src/run/run_kernel.h"

namespace btrdedupe {

struct RunContext {
  const JobOptions& options;
  ProgressSink* progress = nullptr;
  RunKernel& kernel = kernel_run();

  // JobOptions::stop was set: no new round, batch or filesystem starts.
  bool stopped() const { return options.stop && options.stop->load(); }
  // A progress event, when someone listens.
  void report(const char* phase, uint64_t done, uint64_t total) const {
    if (progress) progress->progress(phase, done, total);
  }
};

}  // namespace btrdedupe
