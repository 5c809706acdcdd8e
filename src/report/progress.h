// Progress for people (one live terminal line for the whole run) and for monitors
// (line-delimited JSON events). Both are ProgressSinks (src/report/progress_sink.h) the engine calls at phase
// boundaries, at each window, per fingerprinted extent and after every dedupe round; both
// throttle what they print.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "src/report/progress_sink.h"

namespace btrdedupe {

using ProgressClock = std::chrono::steady_clock;

// What a phase has done, with its rate and ETA (pure: unit-tested).
struct PhaseProgress {
  std::string phase;
  uint64_t done = 0, total = 0;
  double seconds = 0;  // since the phase began

  double fraction() const;         // 0..1, 0 when total is unknown
  double rate() const;             // bytes per second, 0 when unknown
  double eta_seconds() const;      // -1 when unknown
};

// "0:07", "1:02:03"
std::string format_duration(double seconds);

// One live line on a terminal for the whole run (src/report/run_progress.h): redrawn in place
// (\r, erase line) at most every `interval` and at each phase (a window's position shows
// from its first phase on); the per-phase times are the summary's, so finish() erases it.
class TtyProgress : public ProgressSink {
 public:
  explicit TtyProgress(std::FILE* out, std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  void progress(const char* phase, uint64_t done, uint64_t total) override;
  void position(const RunPosition& where) override;
  // Erases the line; call before printing anything else to the terminal.
  void finish();

 private:
  void draw();
  std::FILE* out_;
  std::chrono::milliseconds interval_;
  PhaseProgress current_;
  RunPosition where_;
  ProgressClock::time_point start_, phase_start_, last_draw_;
  bool active_ = false;
};

// One JSON object per line (docs/json-report.md, "Progress events"):
//   {"event":"phase","phase":"scan","elapsed":0.0}
//   {"event":"progress","phase":"dedupe","done":N,"total":M,"elapsed":1.2,"rate":R,"eta":E,
//    "window":W,"windows":K,"estimated":B,"run_done":D,"run_total":T,"run_eta":S}
//   {"event":"end","phase":"dedupe","done":N,"total":M,"seconds":3.4}
// "phase" on entering one; "progress" at most every `interval` within it and whenever
// done reaches total; "end" when the next phase begins or finish() is called.
class JsonProgress : public ProgressSink {
 public:
  explicit JsonProgress(std::FILE* out, std::chrono::milliseconds interval = std::chrono::milliseconds(200));
  void progress(const char* phase, uint64_t done, uint64_t total) override;
  void position(const RunPosition& where) override { where_ = where; }
  // Ends the current phase and writes {"event":"finish","exit_code":N,...}.
  void finish(int exit_code, bool stopped, int64_t net_shared_change);

 private:
  void emit(const std::string& line);
  void end_phase();
  std::FILE* out_;
  std::chrono::milliseconds interval_;
  PhaseProgress current_;
  RunPosition where_;
  ProgressClock::time_point start_, phase_start_, last_emit_;
  uint64_t emitted_done_ = 0;
  bool active_ = false;
};

}  // namespace btrdedupe
