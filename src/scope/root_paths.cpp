#include "src/scope/root_paths.h"

#include <sys/stat.h>

#include <cstdlib>
#include <memory>

namespace btrdedupe {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The target of a symlinked root, spelled in full so that every file below it opens
// without following a link again (files inside the tree are opened with O_NOFOLLOW).
std::string followed(const std::string& path) {
  const std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr),
                                                         &std::free);
  return real ? std::string(real.get()) : path;
}

}  // namespace

RootPaths resolve_roots(const std::vector<std::string>& paths) {
  RootPaths out;
  for (const auto& path : paths) {
    struct stat link {};
    if (::lstat(path.c_str(), &link) != 0) {
      out.paths.push_back(path);
      continue;
    }
    struct stat target = link;
    const bool symlink = S_ISLNK(link.st_mode);
    if (symlink && ::stat(path.c_str(), &target) != 0) {
      out.paths.push_back(path);  // dangling: the scan says so
      continue;
    }
    if (!S_ISDIR(target.st_mode) && !S_ISREG(target.st_mode)) {
      out.notes.push_back(path + (symlink ? " (a symlink to " + followed(path) + ")" : "") +
                          ": " + kind_of(target.st_mode) +
                          ", neither a file nor a directory: passed over");
      continue;
    }
    out.paths.push_back(symlink ? followed(path) : path);
  }
  return out;
}

bool paths_within(const std::vector<std::string>& paths, const std::vector<std::string>& roots) {
  auto below = [](const std::string& path, const std::string& root) {
    if (path.compare(0, root.size(), root) != 0) return false;
    return path.size() == root.size() || root == "/" || path[root.size()] == '/';
  };
  for (const auto& path : paths) {
    bool found = false;
    for (const auto& root : roots) found = found || below(path, root);
    if (!found) return false;
  }
  return true;
}

}  // namespace btrdedupe
