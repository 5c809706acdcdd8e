#include "src/report/run_progress.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "src/report/byte_size.h"

namespace btrdedupe {
namespace {

struct PhaseWeight {
  const char* phase;
  double dedupe_run, report_run;  // share of a window's time
};

// From dataset P's phase times (docs/benchmarks.md): -dr spends ~80% in dedupe, -r most of
// its time in the scan.
constexpr PhaseWeight kWeights[] = {{"scan", 0.08, 0.55},
                                    {"fingerprint", 0.04, 0.25},
                                    {"match", 0.03, 0.20},
                                    {"dedupe", 0.80, 0.0},
                                    {"rewrite", 0.0, 0.0},  // brief: at most 256 MiB written
                                    {"confirm", 0.05, 0.0}};

// Share of the window done when `phase` is `fraction` through.
double window_fraction(const PhaseProgress& phase, bool dedupe) {
  double before = 0;
  for (const auto& w : kWeights) {
    const double weight = dedupe ? w.dedupe_run : w.report_run;
    if (phase.phase == w.phase) return std::min(1.0, before + weight * phase.fraction());
    before += weight;
  }
  return 0;
}

}  // namespace

RunEstimate estimate_run(const RunPosition& where, const PhaseProgress& phase, double elapsed) {
  RunEstimate e;
  e.total = std::max(where.bytes_total, where.bytes_before + where.window_bytes);
  if (e.total == 0) return e;
  const double in_window = window_fraction(phase, where.dedupe);
  e.done = where.bytes_before +
           static_cast<uint64_t>(std::llround(static_cast<double>(where.window_bytes) * in_window));
  e.done = std::min(e.done, e.total);
  e.fraction = static_cast<double>(e.done) / static_cast<double>(e.total);
  // Too early to say: the first percent is mostly the scan's fixed cost.
  if (e.fraction >= 0.01 && elapsed > 0) e.eta_seconds = elapsed * (1 - e.fraction) / e.fraction;
  // Work is not spread evenly over the run's bytes (on P every duplicate is in the second
  // copy's windows), but the run cannot end before the phase under way does.
  if (e.eta_seconds >= 0 && e.done < e.total)
    e.eta_seconds = std::max(e.eta_seconds, phase.eta_seconds());
  return e;
}

std::string format_run_line(const RunPosition& where, const PhaseProgress& phase,
                            const RunEstimate& estimate) {
  std::string line;
  const char* approx = where.estimated ? "~" : "";
  if (where.window) {
    line = "window " + std::to_string(where.window);
    if (where.windows) line += "/" + std::string(approx) + std::to_string(where.windows);
    line += " · ";
  }
  line += phase.phase;
  char buf[64];
  if (phase.total) {
    std::snprintf(buf, sizeof buf, " %.0f%%", std::floor(phase.fraction() * 100));
    line += buf;
  }
  if (estimate.total == 0) {
    std::snprintf(buf, sizeof buf, " %.1f s", phase.seconds);
    return line + buf;
  }
  line += " · " + human_bytes(estimate.done) + " of " + approx + human_bytes(estimate.total);
  line += " · ETA " + (estimate.eta_seconds >= 0 ? std::string(approx) + format_duration(estimate.eta_seconds)
                                                 : std::string("?"));
  return line;
}

}  // namespace btrdedupe
