// Running shell commands from tests: fixture builders, mkfs, the btrdedupe binary.
#pragma once

#include <string>

namespace btrdedupe::test {

struct CommandResult {
  int exit_code = -1;   // -1 when the command could not be run or died on a signal
  std::string output;   // stdout and stderr, interleaved
};

// Runs `command` with /bin/sh -c, capturing stdout+stderr.
CommandResult run_command(const std::string& command);

// Quotes a string for /bin/sh: 'it'\''s'.
std::string shell_quote(const std::string& s);

}  // namespace btrdedupe::test
