// A full run read in windows of files (CatalogSession::windowed_scan), for a tree too large
// to hold whole: each window is fingerprinted with its earlier twins, matched, planned,
// deduped and confirmed, then dropped, so memory follows the window, not the tree.
#pragma once

#include "src/catalog/catalog_session.h"
#include "src/run/job.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// Runs the windows of `base` (the session's windowed_scan result) into `r`. Sharing and
// per-subvolume figures add up each window's own files, leaving out data its earlier
// twins hold (counted in their window). A failure ends the windows: what they did stands,
// and the run is recorded only when none failed.
void run_windowed(CatalogSession& session, const ScanResult& base, const JobOptions& o,
                  ProgressSink* progress, FilesystemReport& r);

}  // namespace btrdedupe
