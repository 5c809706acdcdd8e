#include "src/read/scan_scope.h"

namespace btrdedupe {

btrfs::Result<ScanResult> ScanScope::scan_subvolumes(const ScanOptions& options) const {
  return btrdedupe::scan_subvolumes(paths.front(), *subvolumes, options);
}

btrfs::Result<std::unique_ptr<IncrementalScan>> ScanScope::reader(const ScanOptions& options,
                                                                  ScanResult& out) const {
  if (flat()) return IncrementalScan::of_subvolumes(paths.front(), *subvolumes, options, out);
  return IncrementalScan::of_roots(paths, options, out);
}

}  // namespace btrdedupe
