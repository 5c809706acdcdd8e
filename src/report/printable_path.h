// Paths made safe to print on one line, and the UTF-8 check behind it. Apart from the text
// report because the subvolume listing escapes paths the same way and the JSON report asks
// the same UTF-8 question.
#pragma once

#include <string>

namespace btrdedupe {

// A path as one printable line: control bytes, backslash and bytes that are not UTF-8
// escaped C-style (\n, \t, \\, \xNN), so odd names never split a line.
std::string printable_path(const std::string& path);

bool is_valid_utf8(const std::string& s);

}  // namespace btrdedupe
