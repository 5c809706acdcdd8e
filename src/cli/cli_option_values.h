// The command line's options with a value: each read from the parsed command line and
// checked, in the order their errors are reported. Internal to the command line. Apart
// from the parsing (src/cli/cli_options.cpp) because each value has its own rule and message,
// and the parse only needs the first error.
#pragma once

#include <boost/program_options/variables_map.hpp>
#include <string>

#include "src/cli/cli_options.h"

namespace btrdedupe {

// The options with a value, in the order their errors are reported: the first wrong one.
std::string read_valued_options(const boost::program_options::variables_map& vm, CliOptions& o);

}  // namespace btrdedupe
