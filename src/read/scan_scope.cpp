#include "src/read/scan_scope.h"

namespace btrdedupe {

btrfs::Result<ScanResult> ScanScope::scan_subvolumes(const ScanOptions& options) const {
  return btrdedupe::scan_subvolumes(paths.front(), *subvolumes, options);
}

}  // namespace btrdedupe
