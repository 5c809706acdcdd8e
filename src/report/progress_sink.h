// Progress events for people and monitors: where the run stands, and each phase's bytes.
// The engine calls a ProgressSink; src/report/progress.h draws or emits the events.
#pragma once

#include <cstdint>

namespace btrdedupe {

// Where the run stands as a whole: the data it has and will go through, and its window.
// A windowed run learns its size as it reads, so its totals are estimates until the last
// window (CatalogSession::read_fraction).
struct RunPosition {
  uint64_t window = 0;          // 1-based window under way; 0: the tree is read whole
  uint64_t windows = 0;         // windows in all, estimated (0: not known)
  bool estimated = false;       // windows and bytes_total are estimates
  uint64_t bytes_before = 0;    // data in regular extents of the windows done
  uint64_t window_bytes = 0;    // of the window under way (a whole run: all of it)
  uint64_t bytes_total = 0;     // of the whole run
  bool dedupe = false;          // the run dedupes (its phases weigh differently)
};

// Progress events for people and monitors. Called from the job's thread.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // phase: "scan", "fingerprint", "match", "dedupe", "rewrite", "confirm"; bytes done of total
  // (total 0 when unknown).
  virtual void progress(const char* phase, uint64_t done, uint64_t total) = 0;
  // The run's position, once its data is known and again at each window.
  virtual void position(const RunPosition& /*where*/) {}
};

}  // namespace btrdedupe
