// The command line's option table: every option, its value and its help line, and which
// options collect every occurrence. Internal to the command line. Apart from the parsing
// (src/cli/cli_options.cpp): it is the text the user reads and grows with every option, while
// the parse around it stays; --help and the parser both read this one table.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <set>
#include <string>

namespace btrdedupe {

// Options that collect every occurrence; any other valued option takes its last one, as
// duperemove's getopt loop does (a wrapper's default, then the caller's override).
const std::set<std::string>& composing();

// The options --help shows, in its four sections.
boost::program_options::options_description visible_options();

}  // namespace btrdedupe
