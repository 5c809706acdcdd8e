// The scans of a run's paths, grouped by filesystem: the paths of one filesystem are
// deduped together, the filesystems in the order their first path was given.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "btrfs/result.h"
#include "src/report/progress_sink.h"
#include "src/read/root_reader.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct PathScans {
  std::vector<std::string> filesystems;                    // fsids, in the paths' order
  std::map<std::string, std::vector<ScanResult>> scans;    // by fsid
  std::map<std::string, double> seconds;                   // by fsid
  std::vector<std::string> errors;                         // paths that could not be scanned
};

// Scans each path in `paths`. A path that cannot be scanned is one of the errors; the
// others go on. With options.max_files, the paths' files together are capped: past it the
// whole is EFBIG (the only error returned), and the run either takes windows or scans again
// without the cap.
btrfs::Result<PathScans> scan_paths(const std::vector<std::string>& paths,
                                    const ScanOptions& options, const RootReader& reader,
                                    ProgressSink* progress);

}  // namespace btrdedupe
