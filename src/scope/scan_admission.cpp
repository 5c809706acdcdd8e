#include "src/scope/scan_admission.h"

namespace btrdedupe {

bool admits_subvolume(const ScanOptions& options, uint64_t id, const ScanRoot& root,
                      const std::string& relative) {
  if (options.excluded_subvolumes.count(id)) return false;
  return !options.exclude || !options.exclude(root.path, relative);
}

void count_left_out(Admission admission, ScanResult& out) {
  switch (admission) {
    case Admission::Taken:
      return;
    case Admission::Excluded:
      ++out.excluded;
      return;
    case Admission::Small:
      ++out.passed_over.excluded_files;
      return;
  }
}

}  // namespace btrdedupe
