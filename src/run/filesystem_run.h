// One filesystem's run on a tree held whole: fingerprint, match, plan, dedupe, confirm,
// figures, record. Its scan is either the paths' (merged per filesystem), a flat subvolume
// selection's, or an incremental run's changed files.
#pragma once

#include <string>
#include <vector>

#include "src/catalog/catalog_session.h"
#include "src/run/job.h"
#include "src/scope/subvolume_selection.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// With --subvol or --all-subvols: exactly these subvolumes, read as one scan (again to confirm).
struct FlatScan {
  std::string fs_path;
  std::vector<SubvolumeRoot> subvolumes;
  btrfs::Result<ScanResult> run(const ScanOptions& options) const {
    return scan_subvolumes(fs_path, subvolumes, options);
  }
};

// Runs `scan` into `r` (whose started, started_at and seconds.scan the caller set).
// `scan_options`: those of the scan, for the confirmation's re-read of the same trees
// (`flat`: of the same subvolumes). `catalog`: the hashfile's session, or nullptr (the
// run's other filesystems go unrecorded: a hashfile serves one). The scan is consumed:
// its extents and files are freed before the confirmation re-reads the tree.
void run_filesystem(ScanResult scan, const JobOptions& o, const ScanOptions& scan_options,
                    ProgressSink* progress, CatalogSession* catalog, FilesystemReport& r,
                    const FlatScan* flat = nullptr);

}  // namespace btrdedupe
