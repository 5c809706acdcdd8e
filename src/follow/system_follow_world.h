// The follower's real world: the followed filesystem's generation (FS_INFO), run_job, the
// status file beside the hashfile and, with --progress=json, a line per change of status.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "src/follow/follower.h"
#include "src/report/progress_sink.h"

namespace btrdedupe {

// `path`: the first followed path; its filesystem (fsid) as it is now is the followed one.
// `json_events`: where status events go as JSON lines (nullptr: none). `progress`: the
// cycles' progress (nullptr: none).
btrfs::Result<std::unique_ptr<FollowWorld>> system_follow_world(const std::string& path,
                                                                const std::string& hashfile,
                                                                std::FILE* json_events,
                                                                ProgressSink* progress);

// The world system_follow_world gives once its checks pass: the filesystem at `path` is
// followed while it keeps `fsid`, the status goes to `status_path`. Apart so that how it
// meets a path that is no longer that filesystem, and how it publishes, are tested on any
// directory.
std::unique_ptr<FollowWorld> follow_world_at(const std::string& path, const std::string& fsid,
                                             const std::string& status_path,
                                             std::FILE* json_events, ProgressSink* progress);

// Idle CPU and I/O priority for the whole process (every thread started after it).
// Returns what could not be set, in words ("" when all was).
std::string take_idle_priority();

}  // namespace btrdedupe
