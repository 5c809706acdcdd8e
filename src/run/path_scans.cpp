#include "src/run/path_scans.h"

#include <cerrno>

#include "src/run/run_stages.h"

namespace btrdedupe {

btrfs::Result<PathScans> scan_paths(const std::vector<std::string>& paths,
                                    const ScanOptions& options, const RootReader& reader,
                                    ProgressSink* progress) {
  PathScans out;
  const uint64_t cap = options.max_files;
  uint64_t files = 0;
  for (const auto& path : paths) {
    const auto t = Clock::now();
    report_progress(progress, "scan", 0, 0);
    ScanOptions capped = options;
    if (cap) capped.max_files = cap > files ? cap - files : 1;
    auto scan = reader.scan(path, capped);
    if (!scan && cap && scan.error().code == EFBIG) return scan.error();
    if (!scan) {
      out.errors.push_back(scan.error().message());
      continue;
    }
    files += scan->files.size();
    const std::string fsid = scan->fs.fsid_string();
    if (!out.scans.count(fsid)) out.filesystems.push_back(fsid);
    out.scans[fsid].push_back(std::move(*scan));
    out.seconds[fsid] += since(t);
  }
  return out;
}

}  // namespace btrdedupe
