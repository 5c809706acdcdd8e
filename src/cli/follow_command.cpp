#include "src/cli/follow_command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_set>
#include <utility>

#include "src/follow/system_follow_world.h"

namespace btrdedupe {
namespace {

std::string canonical(const std::string& path) {
  std::error_code error;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path), error);
  return error ? path : p.string();
}

}  // namespace

FollowOptions follow_options(const CliOptions& o) {
  FollowOptions f;
  f.timing.settle = o.settle;
  f.timing.poll = o.poll_interval;
  f.yield.stall_limit = o.stall_limit;
  f.yield.max_read_rate = o.max_read_rate;
  f.yield.watch_stalls = o.yield;
  f.cycle_runtime = o.max_runtime;
  f.quiet = o.quiet;
  return f;
}

// The scan asks for every file: only a name the hashfile's files can have costs a path
// lookup.
void leave_out_hashfile(JobOptions& job, const std::string& hashfile) {
  const std::string own = canonical(hashfile);
  const std::string base = std::filesystem::path(own).filename().string();
  std::unordered_set<std::string> names;
  for (const char* suffix : {"", "-journal", "-wal", "-shm", ".follow", ".follow.new"})
    names.insert(base + suffix);
  auto earlier = std::move(job.exclude);
  job.exclude = [own, base, names, earlier](const std::string& root, const std::string& relative) {
    if (earlier && earlier(root, relative)) return true;
    const auto slash = relative.rfind('/');
    const std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
    if (!names.count(name)) return false;
    const std::string dir = slash == std::string::npos ? root : root + "/" + relative.substr(0, slash);
    return canonical(dir) + "/" + base == own;
  };
}

int run_follow(const CliOptions& o, JobOptions job, FollowSignals signals, ProgressSink* progress) {
  std::FILE* events = o.progress == ProgressMode::Json ? stderr : nullptr;
  if (job.reader == ReaderKind::Paths) {
    std::fprintf(stderr, "btrdedupe: --follow reads what changed by generation: it needs the "
                         "tree reader, not --reader=paths\n");
    return kExitUsage;
  }
  auto world = system_follow_world(job.paths.front(), job.hashfile, events, progress);
  if (!world) {
    std::fprintf(stderr, "btrdedupe: --follow: %s\n", world.error().message().c_str());
    return kExitError;
  }
  const FollowOptions options = follow_options(o);
  if (options.yield.watch_stalls)
    if (const auto missed = take_idle_priority(); !missed.empty() && !o.quiet)
      std::fprintf(stderr, "btrdedupe: note: could not take idle priority (%s)\n", missed.c_str());
  leave_out_hashfile(job, job.hashfile);
  if (!o.quiet)
    std::fprintf(stdout, "following %s (hashfile %s, pid %d)\n", job.paths.front().c_str(),
                 job.hashfile.c_str(), static_cast<int>(::getpid()));
  std::fflush(stdout);
  return follow(job, options, **world, steady_clock(), proc_pressure(), signals, stdout);
}

}  // namespace btrdedupe
