// The command line: duperemove-compatible where the meaning is the same.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "src/dedupe/dedupe_engine.h"
#include "src/read/reader_kind.h"
#include "src/report/exit_codes.h"

namespace btrdedupe {

enum class ProgressMode { Auto, Tty, Json, None };

struct CliOptions {
  std::vector<std::string> paths;
  bool recursive = false;
  bool dedupe = false;         // -d: otherwise only report
  bool dry_run = false;        // --dry-run: plan and say what -d would do, change nothing
  uint64_t block_size = 128 * 1024;
  unsigned io_threads = 0;     // 0: choose
  std::optional<ReaderKind> reader;  // --reader; nullopt: chosen by what is allowed
  bool quiet = false;
  unsigned verbose = 0;        // -v (repeatable)
  bool debug = false;
  bool human = false;          // -h: human-readable sizes
  uint64_t min_size = 0;
  std::vector<std::string> exclude;  // --exclude globs (see path_excluded)
  bool partial = true;         // --dedupe-options=[no]partial, only_whole_files
  bool rewrite = true;         // --dedupe-options=[no]rewrite: small remainders (JobOptions)
  bool fdupes = false;         // --fdupes: file groups from stdin
  bool json = false;           // --json: the report as one JSON document on stdout
  ProgressMode progress = ProgressMode::Auto;
  Prefetch prefetch = Prefetch::Fadvise;
  std::string hashfile;        // --hashfile=F (the catalog; see JobOptions::hashfile)
  uint64_t window_files = 0;   // -B N (JobOptions::window_files); 0: automatic
  double max_runtime = 0;      // --max-runtime DURATION, in seconds; 0: no limit
  // Accepted for duperemove compatibility, without effect here; each is noted once.
  std::vector<std::string> no_effect;
  bool show_help = false;
  bool show_version = false;
  // Hashfile commands (src/catalog/catalog_commands.h): do that and exit.
  bool list_catalog = false;         // -L
  bool remove_from_catalog = false;  // -R PATH...
  bool catalog_stats = false;        // --stats
  bool catalog_history = false;      // --history
  // Subvolumes (src/scope/subvolume_selection.h).
  std::vector<std::string> subvols;          // --subvol ID|PATH: exactly these
  std::vector<std::string> exclude_subvols;  // --exclude-subvol ID|PATH
  bool all_subvols = false;                  // --all-subvols
  bool dedupe_readonly = false;              // --dedupe-readonly: read-only snapshots too
  bool list_subvols = false;                 // --list-subvols PATH: list them and exit
  // Follow mode (src/follow/follower.h): dedupe what lands, cycle after cycle.
  bool follow = false;           // --follow (implies -d -r; needs --hashfile)
  double settle = 15;            // --settle DURATION: quiet time before a cycle reads a change
  double poll_interval = 5;      // --poll-interval DURATION: between looks at the generation
  double stall_limit = 0.2;      // --stall-limit PERCENT: yield while others stall this much
  bool yield = true;             // --no-yield: never pause, keep the process's priority
  uint64_t max_read_rate = 0;    // --max-read-rate SIZE (per second); 0: no cap
  bool follow_status = false;    // --status: print the follower's status and exit
};

struct ParsedCli {
  CliOptions options;
  std::string error;  // one line; non-empty means exit kExitUsage
};

ParsedCli parse_cli(int argc, const char* const* argv);
std::string cli_help();

// --dedupe-options=LIST: comma-separated [no]same, [no]partial, [no]only_whole_files,
// [no]rewrite.
// Returns "" or a one-line error.
std::string apply_dedupe_options(const std::string& list, CliOptions& options);

// True when `relative` (a path below scan root `root`, "a/b/c") is excluded by one of
// `patterns`: fnmatch(3) globs without FNM_PATHNAME (so * and ? also match '/'), tested
// against the relative path; a pattern that matches a leading directory excludes everything
// below it. A pattern starting with '/' is tested against root + "/" + relative instead.
bool path_excluded(const std::vector<std::string>& patterns, const std::string& root,
                   const std::string& relative);

// fdupes output: groups of paths, one per line, groups separated by blank lines.
// Lines are taken literally (a trailing '\r' is dropped); groups of fewer than two are kept
// as they are (the caller decides).
std::vector<std::vector<std::string>> read_fdupes_groups(std::istream& in);

}  // namespace btrdedupe
