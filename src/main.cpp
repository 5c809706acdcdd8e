// btrdedupe: the command line around the engine.
#include <cstdio>

#include "src/cli_options.h"
#include "src/job.h"
#include "src/text_report.h"

int main(int argc, char** argv) {
  using namespace btrdedupe;
  const auto parsed = parse_cli(argc, argv);
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "btrdedupe: %s\n", parsed.error.c_str());
    return kExitUsage;
  }
  const CliOptions& o = parsed.options;
  if (o.show_help) {
    std::fputs(cli_help().c_str(), stdout);
    return kExitOk;
  }
  if (o.show_version) {
    std::puts("btrdedupe " BTRDEDUPE_VERSION);
    return kExitOk;
  }
  JobOptions job;
  job.paths = o.paths;
  job.recursive = o.recursive;
  job.dedupe = o.dedupe;
  job.min_file_size = o.min_size;
  job.block_size = o.block_size;
  if (o.io_threads) job.io_threads = o.io_threads;
  job.list_groups = !o.dedupe;
  const JobReport report = run_job(job);
  TextReportOptions text;
  text.human = o.human;
  text.quiet = o.quiet;
  text.list_groups = job.list_groups;
  print_text_report(report, job, text, stdout, stderr);
  return report.exit_code();
}
