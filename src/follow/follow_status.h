// What a follower has done and is doing, for people (btrdedupe --status) and monitors
// (--status --json, --progress=json). It lives beside the hashfile (HASHFILE.follow),
// written whole and renamed into place at each change of state, so a reader never takes
// the hashfile's lock and never sees half a status; a follower killed with SIGKILL leaves
// the last one, which --status shows with "not running".
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "btrfs/result.h"

namespace btrdedupe {

struct FollowStatus {
  int64_t pid = 0;
  int64_t started = 0;            // unix seconds, for this and every time below
  std::string state;              // "first pass", "cycle", "waiting", "paused", "stopped"
  std::string waiting_for;        // what it waits for, in words (when waiting)
  std::string stop_reason;        // when stopped: why
  uint64_t cycles = 0;            // runs recorded in the hashfile, the first pass included
  uint64_t cycles_with_changes = 0;
  uint64_t bytes_deduped = 0, bytes_freed = 0;  // over all cycles (freed: the extent tree's)
  uint64_t files_read = 0;        // files fingerprinted over all cycles
  int64_t last_change_seen = 0;   // a write to the filesystem (0: none since it started)
  int64_t last_cycle_started = 0, last_cycle_ended = 0;
  double last_cycle_seconds = 0;
  uint64_t files_settling = 0;    // left by the last cycle to settle
  uint64_t pauses = 0;            // waits for others' I/O or CPU stalls
  double paused_seconds = 0;
  std::string last_error;
};

// HASHFILE.follow
std::string follow_status_path(const std::string& hashfile);

std::string to_json(const FollowStatus& s);
std::optional<FollowStatus> follow_status_from_json(const std::string& text);

// Writes `s` to `path` (a temporary file renamed over it).
btrfs::Result<void> write_follow_status(const std::string& path, const FollowStatus& s);
btrfs::Result<FollowStatus> read_follow_status(const std::string& path);

// btrdedupe --status: the status of the follower of `hashfile`, as text or JSON. Returns the
// exit code: 0 a follower runs, 1 no status, 3 it is not running (stopped or killed).
int print_follow_status(const std::string& hashfile, bool json, bool human, std::FILE* out,
                        std::FILE* err);

}  // namespace btrdedupe
