// The command line (src/cli/cli_options.h parse_cli): the input is split at NUL bytes into
// arguments after argv[0]. Any input must give options or a one-line error, never an
// exception or a crash.
#include <string>
#include <vector>

#include "src/report/byte_size.h"
#include "src/cli/cli_options.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"btrdedupe"};
  std::string current;
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(data[i]);
    }
  }
  if (!current.empty() && args.size() < 64) args.push_back(current);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const auto parsed = btrdedupe::parse_cli(static_cast<int>(args.size()), argv.data());
  fuzz::touch(parsed.error);
  // One line, unless an argument brought its own newline into the message.
  bool newline_given = false;
  for (const auto& a : args) newline_given = newline_given || a.find('\n') != std::string::npos;
  if (!newline_given && parsed.error.find('\n') != std::string::npos) __builtin_trap();
  for (const auto& p : parsed.options.paths) fuzz::touch(p);
  for (const auto& a : args) (void)btrdedupe::parse_byte_size(a);
  return 0;
}
