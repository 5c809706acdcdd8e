// The paths a user names on the command line, taken as duperemove takes them: a symlink
// given as a root is followed (never one met inside the tree), and a root that is neither
// a regular file nor a directory (a fifo, a device, a symlink to /dev/null) is passed over
// with one line instead of failing the run.
#pragma once

#include <string>
#include <vector>

namespace btrdedupe {

struct RootPaths {
  std::vector<std::string> paths;   // to scan, in the order given; symlinks resolved
  std::vector<std::string> notes;   // one line per root passed over, naming it and why
};

// A path that cannot be looked at (missing, no permission) is kept as given: the scan
// then fails on it with its own message, as for any root.
RootPaths resolve_roots(const std::vector<std::string>& paths);

// Whether every one of `paths` is one of `roots` or lies below one (absolute paths without
// "." or ".." components, as realpath() spells them; "/a/bc" is not below "/a/b").
bool paths_within(const std::vector<std::string>& paths, const std::vector<std::string>& roots);

}  // namespace btrdedupe
