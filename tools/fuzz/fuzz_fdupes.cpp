// fdupes output on stdin (--fdupes): groups of paths, one per line (src/cli/cli_options.h
// read_fdupes_groups), and the common directory of each group's absolute paths
// (src/scope/fdupes_input.h).
#include <sstream>
#include <string>

#include "src/cli/cli_options.h"
#include "src/scope/fdupes_input.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (const auto& group : btrdedupe::read_fdupes_groups(in)) {
    std::vector<std::string> absolute;
    for (const auto& p : group) {
      fuzz::touch(p);
      if (!p.empty() && p[0] == '/') absolute.push_back(p);
    }
    if (!absolute.empty()) fuzz::touch(btrdedupe::common_directory(absolute));
  }
  return 0;
}
