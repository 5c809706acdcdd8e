// What a run reads: the paths it was given, or with a flat subvolume selection (--subvol,
// --all-subvols) exactly those subvolumes of the filesystem its first path is on. One value
// for every reader, so no reader has an entry point per kind of scope (a reader's targeted
// reads of a scope: RootReader::targeted).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "btrfs/result.h"
#include "src/read/incremental_scan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct ScanScope {
  std::vector<std::string> paths;  // a flat selection: the first names the filesystem
  std::optional<std::vector<SubvolumeRoot>> subvolumes;  // the flat selection, when one

  // A flat selection is read whole by the run's subvolume ground
  // (SubvolumeGround::scan); the paths' scans are grouped by filesystem instead
  // (src/run/path_scans.h).
  bool flat() const { return subvolumes.has_value(); }
};

}  // namespace btrdedupe
