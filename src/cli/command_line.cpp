#include "src/cli/command_line.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "src/catalog/catalog_commands.h"
#include "src/cli/cli_options.h"
#include "src/cli/follow_command.h"
#include "src/follow/follow_status.h"
#include "src/scope/fdupes_input.h"
#include "src/run/job.h"
#include "src/report/json_report.h"
#include "src/report/progress.h"
#include "src/scope/root_paths.h"
#include "src/run/run_deadline.h"
#include "src/scope/subvolume_list.h"
#include "src/report/text_report.h"
#include "src/run/heap_release.h"

#include "src/run/run_world.h"

namespace btrdedupe {
namespace {

// Progress to a terminal or a monitor, as --progress and -q say.
class Progress {
 public:
  Progress(ProgressMode mode, bool quiet) {
    if (mode == ProgressMode::Json) {
      json_ = std::make_unique<JsonProgress>(stderr);
    } else if (!quiet && (mode == ProgressMode::Tty ||
                          (mode == ProgressMode::Auto && ::isatty(STDERR_FILENO)))) {
      tty_ = std::make_unique<TtyProgress>(stderr);
    }
  }
  ProgressSink* sink() {
    if (json_) return json_.get();
    return tty_.get();
  }
  void finish(const JobReport& report, int exit_code) {
    if (tty_) tty_->finish();
    if (json_) json_->finish(exit_code, report.stopped, report.net_shared_change());
  }

 private:
  std::unique_ptr<TtyProgress> tty_;
  std::unique_ptr<JsonProgress> json_;
};

// --exclude patterns; an absolute pattern needs the root's absolute path (once per root).
class UserExcludes {
 public:
  explicit UserExcludes(const std::vector<std::string>& patterns) : patterns_(patterns) {}
  bool operator()(const std::string& root, const std::string& relative) {
    if (patterns_.empty()) return false;
    auto it = absolute_roots_.find(root);
    if (it == absolute_roots_.end()) {
      char* real = ::realpath(root.c_str(), nullptr);
      it = absolute_roots_.emplace(root, real ? real : root).first;
      std::free(real);
    }
    return path_excluded(patterns_, it->second, relative);
  }

 private:
  const std::vector<std::string>& patterns_;
  std::map<std::string, std::string> absolute_roots_;
};

// Help, version and the commands that are the whole run: their exit code, if one is given.
std::optional<int> run_command(const CliOptions& o, RunWorld& world) {
  if (o.show_help) {
    std::fputs(cli_help().c_str(), stdout);
    return kExitOk;
  }
  if (o.show_version) {
    std::puts("btrdedupe " BTRDEDUPE_VERSION);
    return kExitOk;
  }
  if (o.follow_status) return print_follow_status(o.hashfile, o.json, o.human, stdout, stderr);
  if (o.list_catalog) return list_catalog(o.hashfile, o.human, stdout, stderr);
  if (o.catalog_stats) return catalog_stats(o.hashfile, o.human, stdout, stderr);
  if (o.catalog_history) return catalog_history(o.hashfile, o.human, stdout, stderr);
  if (o.remove_from_catalog)
    return remove_from_catalog(o.hashfile, o.paths, world.reader(ReaderKind::Tree), stdout,
                               stderr);
  if (o.list_subvols)
    return list_subvolumes_command(o.paths.front(), {o.hashfile, o.human, o.json}, stdout, stderr,
                                   world.subvolume_ground());
  return std::nullopt;
}

JobOptions job_options(const CliOptions& o) {
  JobOptions job;
  job.paths = o.paths;
  job.recursive = o.recursive;
  job.dedupe = o.dedupe && !o.dry_run;
  job.min_file_size = o.min_size;
  job.block_size = o.block_size;
  job.partial = o.partial;
  job.rewrite_remainders = o.rewrite;
  job.hashfile = o.hashfile;
  job.window_files = o.window_files;
  job.subvolumes = {o.subvols, o.exclude_subvols, o.all_subvols};
  job.dedupe_readonly = o.dedupe_readonly;
  job.prefetch = o.prefetch;
  if (o.io_threads) job.io_threads = o.io_threads;
  job.reader = o.reader;
  job.list_groups = !job.dedupe || o.verbose > 0;
  job.most_valuable_first = o.max_runtime > 0;
  return job;
}

// --fdupes: the groups on stdin, deduped as whole files wherever they lie.
FdupesScan read_fdupes_input(const CliOptions& o, JobOptions& job, RunWorld& world) {
  FdupesScan fdupes = plan_fdupes_scan(
      read_fdupes_groups(std::cin), [&](const std::string& path, bool want_file, std::string* why) {
        return world.filesystem_id(path, want_file, why);
      });
  for (const auto& e : fdupes.errors) std::fprintf(stderr, "btrdedupe: %s\n", e.c_str());
  if (!o.quiet && !o.json)
    std::fprintf(stdout, "fdupes input: %zu groups of 2 or more files, %zu files\n",
                 fdupes.groups, fdupes.files);
  job.paths = fdupes.roots;
  job.recursive = true;
  job.partial = false;  // whole files, as fdupes found them
  job.min_file_size = 0;
  return fdupes;
}

void print_json_report(const CliOptions& o, const JobReport& report,
                       const JobOptions& effective, int signal, int exit_code) {
  JsonReportContext c;
  c.dry_run = o.dry_run;
  c.fdupes = o.fdupes;
  c.exclude = o.exclude;
  c.signal = signal;
  c.exit_code = exit_code;
  c.max_runtime = o.max_runtime;
  TextReportOptions errors;
  errors.errors_only = true;
  print_text_report(report, effective, errors, stdout, stderr);
  write_json_report(report, effective, c,
                    [](std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); });
}

void print_text(const CliOptions& o, const JobOptions& job,
                const JobReport& report, const JobOptions& effective,
                int signal, bool progress_shown) {
  TextReportOptions text;
  text.human = o.human;
  text.quiet = o.quiet;
  text.list_groups = job.list_groups;
  text.debug = o.debug;
  text.dry_run = o.dry_run;
  text.signal = signal;
  if (o.debug && !o.quiet)
    std::fprintf(stdout, "debug: %zu paths, recursive %s, dedupe %s, min size %llu, "
                 "%zu exclude patterns, progress sink %s\n",
                 job.paths.size(), job.recursive ? "on" : "off", job.dedupe ? "on" : "off",
                 static_cast<unsigned long long>(job.min_file_size), o.exclude.size(),
                 progress_shown ? "on" : "off");
  print_text_report(report, effective, text, stdout, stderr);
}

// The PATH arguments as roots to scan, each root passed over said unless -q; false when
// none is left.
bool resolve_path_arguments(CliOptions& o) {
  auto roots = resolve_roots(o.paths);
  if (!o.quiet)
    for (const auto& note : roots.notes) std::fprintf(stderr, "btrdedupe: %s\n", note.c_str());
  if (roots.paths.empty()) return false;
  o.paths = std::move(roots.paths);
  return true;
}

// What the scan leaves out: the --exclude patterns, and with --fdupes what its groups do
// not name. The rule refers to `fdupes` and `user_excluded`, which must outlive the job.
decltype(JobOptions::exclude) exclusion_rule(const CliOptions& o,
                                                        const FdupesScan& fdupes,
                                                        UserExcludes& user_excluded) {
  if (o.fdupes)
    return [&](const std::string& root, const std::string& relative) {
      return fdupes.excluded(root, relative) || user_excluded(root, relative);
    };
  if (!o.exclude.empty())
    return [&](const std::string& root, const std::string& relative) {
      return user_excluded(root, relative);
    };
  return {};
}

// A run that is not --follow: the job, then its exit code, the end of progress and the
// report, in that order (the report states the exit code).
int run_once(const CliOptions& o, const JobOptions& job,
             Progress& progress, const FdupesScan& fdupes,
             RunWorld& world, const StopSignals& signals) {
  JobReport report;
  {
    const RunDeadline deadline(o.max_runtime, signals.stop);
    // No paths with --hashfile: run_job replays the hashfile's stored roots and options.
    if (!(job.paths.empty() && job.hashfile.empty()))
      report = run_job(job, progress.sink(), world);
    report.time_up = deadline.reached() && report.stopped && signals.signal == 0;
  }
  // As run: a replay took its paths and mode from the hashfile.
  const JobOptions& effective = report.options.paths.empty() ? job : report.options;
  const int signal = report.stopped ? static_cast<int>(signals.signal) : 0;
  int exit_code = signal ? 128 + signal : report.exit_code();
  if (report.time_up && exit_code != kExitError) exit_code = kExitTimeUp;
  if (o.fdupes && !fdupes.errors.empty() && exit_code == kExitOk) exit_code = kExitError;
  progress.finish(report, exit_code);

  if (o.json)
    print_json_report(o, report, effective, signal, exit_code);
  else
    print_text(o, job, report, effective, signal, progress.sink() != nullptr);
  std::fflush(stdout);
  return exit_code;
}

}  // namespace

int run_command_line(int argc, char** argv, RunWorld& world, StopSignals& signals) {
  const auto parsed = parse_cli(argc, argv);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "btrdedupe: %s\n", parsed.error.c_str());
    return kExitUsage;
  }
  CliOptions o = parsed.options;
  if (const auto code = run_command(o, world)) return *code;
  if (!o.quiet)
    for (const auto& note : o.no_effect) std::fprintf(stderr, "btrdedupe: note: %s\n", note.c_str());
  // As duperemove: nothing left to do is no error.
  if (!o.paths.empty() && !resolve_path_arguments(o)) return kExitOk;

  JobOptions job = job_options(o);
  UserExcludes user_excluded(o.exclude);
  FdupesScan fdupes;
  if (o.fdupes) fdupes = read_fdupes_input(o, job, world);
  job.exclude = exclusion_rule(o, fdupes, user_excluded);
  job.exclude_patterns = o.exclude;

  if (o.follow) steady_clock();  // its wake-up fd, before a handler may write to it
  if (signals.install_stop_handlers) signals.install_stop_handlers();
  job.stop = &signals.stop;
  Progress progress(o.progress, o.quiet);
  if (o.follow) {
    if (signals.install_wake_handler) signals.install_wake_handler();
    return run_follow(o, std::move(job), {signals.stop, signals.cycle_stop, signals.wake},
                      progress.sink());
  }
  return run_once(o, job, progress, fdupes, world, signals);
}

}  // namespace btrdedupe
