#include "src/scope/fdupes_input.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"

namespace btrdedupe {
namespace {

std::string dirname_of(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string relative_to(const std::string& root, const std::string& file) {
  if (root == "/") return file.substr(1);
  return file.substr(root.size() + 1);
}

}  // namespace

std::string machine_fsid_of(const std::string& path, bool want_file, std::string* why) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) {
    *why = fd.error().message();
    return "";
  }
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || (want_file && !S_ISREG(st.st_mode))) {
    *why = path + ": not a regular file";
    return "";
  }
  if (auto ok = btrfs::check_is_btrfs(fd->get(), path); !ok) {
    *why = ok.error().message();
    return "";
  }
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) {
    *why = info.error().message();
    return "";
  }
  return info->fsid_string();
}

std::string common_directory(const std::vector<std::string>& files) {
  if (files.empty()) return "";
  std::string common = dirname_of(files[0]);
  for (const auto& f : files) {
    while (common != "/" && !(f.size() > common.size() && f.compare(0, common.size(), common) == 0 &&
                              f[common.size()] == '/'))
      common = dirname_of(common);
  }
  return common;
}

bool FdupesScan::excluded(const std::string& root, const std::string& relative) const {
  const auto it = wanted.find(root);
  if (it == wanted.end()) return false;
  const auto& set = it->second;
  if (set.count(relative)) return false;
  // A directory (nested subvolume) holding a listed file stays.
  const std::string prefix = relative + "/";
  const auto below = set.lower_bound(prefix);
  return !(below != set.end() && below->compare(0, prefix.size(), prefix) == 0);
}

FdupesScan plan_fdupes_scan(const std::vector<std::vector<std::string>>& groups,
                            const FilesystemIdentity& fsid_of) {
  FdupesScan out;
  std::map<std::string, std::vector<std::string>> by_fs;  // fsid -> absolute files
  std::set<std::string> seen;
  for (const auto& group : groups) {
    std::vector<std::pair<std::string, std::string>> usable;  // (fsid, real path)
    for (const auto& path : group) {
      char real[PATH_MAX];
      if (::realpath(path.c_str(), real) == nullptr) {
        out.errors.push_back(btrfs::errno_error("fdupes input: " + path).message());
        continue;
      }
      std::string why;
      const std::string fsid = fsid_of(real, true, &why);
      if (fsid.empty()) {
        out.errors.push_back("fdupes input: " + why);
        continue;
      }
      usable.emplace_back(fsid, real);
    }
    if (usable.size() < 2) continue;
    ++out.groups;
    for (auto& [fsid, real] : usable)
      if (seen.insert(real).second) {
        ++out.files;
        by_fs[fsid].push_back(real);
      }
  }
  for (const auto& [fsid, files] : by_fs) {
    // One root per filesystem when the common directory is on it (it may not be: two
    // mounts of one filesystem under /); otherwise one root per directory.
    const std::string common = common_directory(files);
    std::string why;
    std::vector<std::string> roots;
    if (fsid_of(common, false, &why) == fsid) {
      roots.push_back(common);
    } else {
      std::set<std::string> dirs;
      for (const auto& f : files) dirs.insert(dirname_of(f));
      roots.assign(dirs.begin(), dirs.end());
    }
    for (const auto& root : roots) {
      out.roots.push_back(root);
      for (const auto& f : files)
        if (root == "/" || (f.size() > root.size() && f.compare(0, root.size(), root) == 0 &&
                            f[root.size()] == '/'))
          out.wanted[root].insert(relative_to(root, f));
    }
  }
  return out;
}

}  // namespace btrdedupe
