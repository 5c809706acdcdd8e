#include "src/run/run_mode.h"

namespace btrdedupe {

RunMode next_run_mode(const RunFacts& f) {
  if (f.catalog && f.unchanged) return RunMode::Unchanged;
  if (f.walks_paths) return RunMode::Whole;  // a walk knows nothing before it walks
  // Only what changed since the last run, when the catalog allows it.
  if (f.catalog && !f.nothing_selected && !f.incremental_declined) return RunMode::Incremental;
  if (f.nothing_selected) return RunMode::NothingSelected;
  // A tree too large to hold whole is read in windows: always with -B, else once a scan
  // capped at whole_run_files finds more, or the hashfile or an estimate knows it has more.
  const bool windows_wanted = f.windows_requested || f.too_many_files ||
                              f.catalogued_past_cap || f.estimated_past_cap;
  if (f.may_take_windows && !f.windows_declined && windows_wanted) return RunMode::Windows;
  // Before a capped scan that may read up to the cap for nothing.
  if (f.may_take_windows && !windows_wanted && !f.files_estimated) return RunMode::EstimateFiles;
  // A cap only where windows could follow it; -B asked for windows, not for a cap.
  if (f.may_take_windows && !windows_wanted) return RunMode::WholeCapped;
  return RunMode::Whole;
}

}  // namespace btrdedupe
