// The command line: duperemove-compatible where the meaning is the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace btrdedupe {

// Exit codes (documented in docs/btrdedupe.8 once it exists).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

struct CliOptions {
  std::vector<std::string> paths;
  bool recursive = false;
  bool dedupe = false;         // -d: otherwise only report
  uint64_t block_size = 128 * 1024;
  unsigned io_threads = 0;     // 0: choose
  bool quiet = false;
  bool human = false;          // -h: human-readable sizes
  uint64_t min_size = 0;
  bool show_help = false;
  bool show_version = false;
};

struct ParsedCli {
  CliOptions options;
  std::string error;  // one line; non-empty means exit kExitUsage
};

ParsedCli parse_cli(int argc, const char* const* argv);
std::string cli_help();

}  // namespace btrdedupe
