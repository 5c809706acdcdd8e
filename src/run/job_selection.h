// A job's subvolume options (--subvol, --exclude-subvol, --all-subvols), resolved on the
// filesystem of its paths before anything is read.
#pragma once

#include <optional>

#include "src/report/job_report.h"
#include "src/scope/subvolume_selection.h"

namespace btrdedupe {

// Resolves o.subvolumes on the filesystem of the paths (subvolume options work on one), as
// `ground` shows it, and rewrites its words as ids, so a hashfile's scope names the
// subvolumes however they were given. Errors go to report.path_errors, notes to
// report.notes; nullopt: nothing can run.
std::optional<ResolvedSelection> select_subvolumes(JobOptions& o, JobReport& report,
                                                   SubvolumeGround& ground);

}  // namespace btrdedupe
