#include "src/follow/follower.h"

#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <optional>
#include <utility>

#include "src/report/byte_size.h"
#include "src/report/exit_codes.h"
#include "src/report/text_report.h"
#include "src/run/run_deadline.h"

namespace btrdedupe {
namespace {

// What one cycle's report says, summed over its filesystems.
struct CycleFigures {
  uint64_t files_read = 0, deduped = 0, freed = 0, settling = 0;
  int64_t settled_at = 0;  // unix seconds; 0: nothing settles
  bool read_changes = false;
  bool ran = false;  // it reached a filesystem (not stopped by a locked hashfile, say)
  std::string error;
};

CycleFigures figures_of(const JobReport& report) {
  CycleFigures f;
  for (const auto& fs : report.filesystems) {
    f.files_read += fs.catalog.files_changed;
    f.deduped += fs.dedupe.bytes_deduped;
    f.freed += fs.freed.bytes;
    f.settling += fs.catalog.files_settling;
    f.settled_at = std::max(f.settled_at, fs.catalog.settled_at);
    f.read_changes = f.read_changes || (!fs.catalog.unchanged && fs.files > 0);
    if (!fs.error.empty()) f.error = fs.error;
  }
  if (!report.path_errors.empty()) f.error = report.path_errors.front();
  f.ran = !report.filesystems.empty();
  return f;
}

class Follower {
 public:
  Follower(const JobOptions& job, const FollowOptions& options, FollowWorld& world,
           FollowClock& clock, PressureSource& stalls, FollowSignals signals, std::FILE* out)
      : job_(job), o_(options), world_(world), clock_(clock), signals_(signals), out_(out),
        schedule_(options.timing),
        pace_(options.yield, stalls, clock, &signals.cycle_stop) {
    status_.pid = ::getpid();
    status_.started = world_.unix_now();
  }

  // The story of a follower: a first pass, then a cycle whenever the schedule says, until
  // a signal or the filesystem's going away ends it.
  int run() {
    if (auto ended = cycle("first pass", 0)) return *ended;
    if (!first_pass_ran_) return stop(kExitError, "the first pass failed: " + status_.last_error);
    while (!signals_.stop.load()) {
      const NextStep step = schedule_.next(clock_.now());
      if (step.run_cycle) {
        pace_.wait_for_quiet();
        if (signals_.stop.load()) break;
        if (auto ended = cycle("cycle", o_.timing.settle)) return *ended;
      } else if (auto ended = wait(step)) {
        return *ended;
      }
    }
    return stop(kExitOk, "stopped on a signal");
  }

 private:
  // Until the next look at the generation. An exit code when the filesystem went away.
  std::optional<int> wait(const NextStep& step) {
    if (status_.state != "waiting" || status_.waiting_for != step.waiting_for) {
      status_.state = "waiting";
      status_.waiting_for = step.waiting_for;
      if (auto gone = publish_own()) return gone;
    }
    const double left = step.look_at - clock_.now();
    if (left > 0) clock_.sleep(left, &signals_.wake);
    if (signals_.wake.exchange(false)) schedule_.wake();
    if (signals_.stop.load()) return std::nullopt;
    auto marks = world_.look();
    if (!marks) return stop(kExitError, marks.error().message());
    const auto before = schedule_.last_change();
    schedule_.observe(clock_.now(), *marks);
    if (schedule_.last_change() != before) status_.last_change_seen = world_.unix_now();
    return std::nullopt;
  }

  // The status, written where the hashfile lies: on the followed filesystem, that write is
  // a transaction of its own, which must not look like a change that calls for a cycle.
  // Right before it the follower has just looked: a change that lands between that look
  // and this one (milliseconds) is taken for its own and waits for the next write.
  std::optional<int> publish_own() {
    world_.publish(status_);
    world_.commit();
    auto after = world_.look();
    if (!after) return stop(kExitError, after.error().message());
    schedule_.own_write(*after);
    return std::nullopt;
  }

  // One run. An exit code when the filesystem went away during it.
  std::optional<int> cycle(const char* state, double settle) {
    auto at_start = world_.look();
    if (!at_start) return stop(kExitError, at_start.error().message());
    const double began = clock_.now();
    status_.state = state;
    status_.last_cycle_started = world_.unix_now();
    world_.publish(status_);
    JobReport report = run_once(settle);
    world_.commit();
    auto at_end = world_.look();
    const CycleFigures f = figures_of(report);
    note(f, clock_.now() - began);
    // Its errors and refused ranges, worded as a run's (a send running, a full disk).
    print_text_report(report, job_, TextReportOptions{.errors_only = true}, out_, stderr);
    first_pass_ran_ = first_pass_ran_ || f.ran;
    if (!at_end) return stop(kExitError, at_end.error().message());
    std::optional<double> settles_at;
    if (f.settling) settles_at = clock_.now() + double(f.settled_at - world_.unix_now());
    if (!f.ran)
      schedule_.cycle_failed(clock_.now(), *at_end);
    else
      schedule_.cycle_done(clock_.now(), at_start->generation, *at_end, f.read_changes,
                           settles_at);
    return std::nullopt;
  }

  JobReport run_once(double settle) {
    JobOptions o = job_;
    o.settle_seconds = settle;
    o.stop = &signals_.cycle_stop;
    if (o_.yield.watch_stalls || o_.yield.max_read_rate) o.pace = &pace_;
    if (!signals_.stop.load()) signals_.cycle_stop = false;
    pace_.start_cycle();
    const RunDeadline deadline(o_.cycle_runtime, signals_.cycle_stop);
    return world_.run(o);
  }

  void note(const CycleFigures& f, double seconds) {
    ++status_.cycles;
    status_.cycles_with_changes += f.read_changes ? 1 : 0;
    status_.files_read += f.files_read;
    status_.bytes_deduped += f.deduped;
    status_.bytes_freed += f.freed;
    status_.files_settling = f.settling;
    status_.last_cycle_ended = world_.unix_now();
    status_.last_cycle_seconds = seconds;
    status_.pauses = pace_.figures().pauses;
    status_.paused_seconds = pace_.figures().paused_seconds;
    if (!f.error.empty()) status_.last_error = f.error;
    if (f.read_changes && !o_.quiet) {
      std::fprintf(out_, "cycle %" PRIu64 ": %" PRIu64 " files read, %s deduped, %s freed, "
                   "%.1f s%s\n", status_.cycles, f.files_read, human_bytes(f.deduped).c_str(),
                   human_bytes(f.freed).c_str(), seconds,
                   f.settling ? (", " + std::to_string(f.settling) + " files settling").c_str()
                              : "");
      std::fflush(out_);
    }
  }

  int stop(int code, const std::string& reason) {
    status_.state = "stopped";
    status_.stop_reason = reason;
    world_.publish(status_);
    if (code != kExitOk) std::fprintf(stderr, "btrdedupe: follower stops: %s\n", reason.c_str());
    return code;
  }

  const JobOptions& job_;
  const FollowOptions& o_;
  FollowWorld& world_;
  FollowClock& clock_;
  FollowSignals signals_;
  std::FILE* out_;
  ChangeSchedule schedule_;
  YieldingPace pace_;
  FollowStatus status_;
  bool first_pass_ran_ = false;
};

}  // namespace

int follow(const JobOptions& job, const FollowOptions& options, FollowWorld& world,
           FollowClock& clock, PressureSource& stalls, FollowSignals signals, std::FILE* out) {
  Follower follower(job, options, world, clock, stalls, signals, out);
  return follower.run();
}

}  // namespace btrdedupe
