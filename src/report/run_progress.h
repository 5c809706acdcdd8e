// The whole run on one progress line: how much of the run's data is through, in which
// window and phase, and when it will end. Pure (unit-tested): the sinks in src/report/progress.h
// draw or emit what these compute.
#pragma once

#include <cstdint>
#include <string>

#include "src/report/progress_sink.h"
#include "src/report/progress.h"

namespace btrdedupe {

struct RunEstimate {
  uint64_t done = 0, total = 0;  // bytes of the run's data through the pipeline, of all
  double fraction = 0;           // 0..1
  double eta_seconds = -1;       // -1 when unknown
};

// A window's data is through in proportion to its phases' usual share of a window's time
// (measured on dataset P: the dedupe's kernel compare dominates a -d run, the scan and the
// fingerprints a report-only one). `elapsed`: seconds since the run began. The ETA scales
// the elapsed time by the fraction left, and is never less than the phase under way needs.
RunEstimate estimate_run(const RunPosition& where, const PhaseProgress& phase, double elapsed);

// "window 3/~7 · dedupe 41% · 1.2 GiB of ~2.6 GiB · ETA 0:12"; before the run's data is
// known, "scan 1.2 s".
std::string format_run_line(const RunPosition& where, const PhaseProgress& phase,
                            const RunEstimate& estimate);

}  // namespace btrdedupe
