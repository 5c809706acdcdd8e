// Which files and nested subvolumes a scan takes. One rule for every reader (the whole
// walk, the windows, the targeted reads of an incremental run), so that what they take and
// what their reports count as left out agree whatever way a run reads its trees.
#pragma once

#include <cstdint>
#include <string>

#include "src/read/tree_scan.h"

namespace btrdedupe {

enum class Admission : uint8_t {
  Taken,     // scanned
  Excluded,  // --exclude: counted in ScanResult::excluded
  Small,     // under --min-size: counted in PassedOver::excluded_files
};

// Whether a file of `size` bytes found below `root` is scanned. `relative(std::string&)`
// gives its path relative to the root and returns false when it has none (a name missing
// from the tree): it is asked only when --exclude needs a path, so a walk without excludes
// builds none. A root naming one file is never excluded by pattern: the user named it.
// Exclusion comes before size: a small excluded file is counted as excluded.
template <class RelativePath>
Admission admit_file(const ScanOptions& options, const ScanRoot& root, uint64_t size,
                     RelativePath&& relative) {
  if (options.exclude && !root.is_file) {
    std::string rel;
    if (!relative(rel) || options.exclude(root.path, rel)) return Admission::Excluded;
  }
  return size < options.min_file_size ? Admission::Small : Admission::Taken;
}

// Whether the subvolume `id`, nested at `relative` below `root`, is read with its own
// nested subvolumes (--exclude-subvol names it, or --exclude matches its path: neither).
bool admits_subvolume(const ScanOptions& options, uint64_t id, const ScanRoot& root,
                      const std::string& relative);

// Counts a file or subvolume left out (not Taken) where every reader's report shows it.
void count_left_out(Admission admission, ScanResult& out);

}  // namespace btrdedupe
