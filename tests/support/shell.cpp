#include "support/shell.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace btrdedupe::test {

CommandResult run_command(const std::string& command) {
  CommandResult result;
  const std::string wrapped = "( " + command + " ) 2>&1";
  FILE* pipe = ::popen(wrapped.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) result.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += "'";
  return out;
}

}  // namespace btrdedupe::test
