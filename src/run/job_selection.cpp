#include "src/run/job_selection.h"

namespace btrdedupe {

std::optional<ResolvedSelection> select_subvolumes(JobOptions& o, JobReport& report,
                                                   SubvolumeGround& ground) {
  if (o.paths.empty()) {
    report.path_errors.push_back("subvolume options need a PATH on the filesystem");
    return std::nullopt;
  }
  std::string fsid;
  for (const auto& p : o.paths) {
    auto info = ground.fs_info(p);
    if (!info) {
      report.path_errors.push_back(info.error().message());
      return std::nullopt;
    }
    if (fsid.empty()) fsid = info->fsid_string();
    if (fsid != info->fsid_string()) {
      report.path_errors.push_back("--subvol, --exclude-subvol and --all-subvols work on one "
                                   "filesystem: " + p + " is not on the filesystem of " +
                                   o.paths.front());
      return std::nullopt;
    }
  }
  auto r = resolve_selection(o.paths.front(), o.subvolumes, ground);
  if (!r) {
    report.path_errors.push_back(r.error().message());
    return std::nullopt;
  }
  o.subvolumes.include.clear();
  for (uint64_t id : r->included) o.subvolumes.include.push_back(std::to_string(id));
  o.subvolumes.exclude.clear();
  for (uint64_t id : r->excluded) o.subvolumes.exclude.push_back(std::to_string(id));
  report.path_errors.insert(report.path_errors.end(), r->errors.begin(), r->errors.end());
  report.notes.insert(report.notes.end(), r->notes.begin(), r->notes.end());
  return std::move(*r);
}

}  // namespace btrdedupe
