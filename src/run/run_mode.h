// How a run reads its trees. Each way may turn out impossible only once tried (the
// hashfile declines an incremental scan, windows cannot be taken, a capped scan finds too
// many files), so run_job learns facts as it goes and asks again after each: the order of
// preference lives here, in one place, testable without a filesystem.
#pragma once

namespace btrdedupe {

enum class RunMode {
  Unchanged,        // the hashfile says nothing changed since its last run: read no tree
  Incremental,      // ask the hashfile for what changed since (CatalogSession::incremental_scan)
  NothingSelected,  // a flat subvolume selection left no subvolume to scan
  EstimateFiles,    // estimate the trees' files from inode numbers (inode_count_estimate.h)
  Windows,          // read the trees in windows of files (CatalogSession::windowed_scan)
  WholeCapped,      // read the trees whole, up to JobOptions::whole_run_files (EFBIG past it)
  Whole,            // read the trees whole, however large
};

// What the run knows so far. The ...declined and too_many_files facts are learnt by trying.
struct RunFacts {
  bool catalog = false;               // a hashfile is open
  // The roots are walked (src/read/path_walk.h): no generations, windows or estimates.
  bool walks_paths = false;
  bool unchanged = false;             // CatalogSession::unchanged_since_last_run said so
  bool nothing_selected = false;      // a flat selection (--subvol, --all-subvols) found none
  bool incremental_declined = false;  // incremental_scan: the trees must be read whole
  bool windows_requested = false;     // -B (JobOptions::window_files)
  // No hashfile (a temporary one serves the windows), or CatalogSession::may_take_windows.
  bool may_take_windows = false;
  bool windows_declined = false;      // windowed_scan: windows cannot be taken here
  bool too_many_files = false;        // a capped whole scan stopped at its cap
  // The hashfile holds rows of more files than the cap allows (its last whole read was in
  // windows): a capped scan would only find so, at the cost of reading that far first.
  bool catalogued_past_cap = false;
  bool files_estimated = false;  // EstimateFiles was done (or cannot be: not recursive)
  // The estimate is well past the cap (a margin over it for the estimate's spread): a
  // capped scan would only find so, as above.
  bool estimated_past_cap = false;
};

// What to try next.
RunMode next_run_mode(const RunFacts& facts);

}  // namespace btrdedupe
