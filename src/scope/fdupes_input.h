// --fdupes: turning fdupes' groups of identical files into a scan that reads only them.
//
// The files of one filesystem become ONE scan root (their deepest common directory) with
// a filter that keeps exactly the listed files and prunes every nested subvolume holding
// none of them, so each subvolume's tree is read once however many files are listed.
// Content matching then finds the same groups (files in different fdupes groups differ)
// and the kernel's compare proves them, as on any run.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace btrdedupe {

struct FdupesScan {
  std::vector<std::string> roots;                    // one per filesystem (or per directory)
  std::map<std::string, std::set<std::string>> wanted;  // root -> paths relative to it
  std::vector<std::string> errors;                   // listed paths that cannot be used
  size_t groups = 0, files = 0;                      // groups of 2+ files used, their files

  // The ScanOptions::exclude filter: true for what is not listed (and holds nothing listed).
  bool excluded(const std::string& root, const std::string& relative) const;
};

// The id of the filesystem `path` is on, or "" with *why saying why it cannot be used
// (want_file: it must be a regular file). A symlink is not followed.
using FilesystemIdentity =
    std::function<std::string(const std::string& path, bool want_file, std::string* why)>;

// The machine's: opens `path` and reads its btrfs filesystem's id (btrfs only).
std::string machine_fsid_of(const std::string& path, bool want_file, std::string* why);

// Resolves each listed path (realpath; must be a regular file whose filesystem `fsid_of`
// names); groups of fewer than two usable files are dropped.
FdupesScan plan_fdupes_scan(const std::vector<std::vector<std::string>>& groups,
                            const FilesystemIdentity& fsid_of = machine_fsid_of);

// Deepest common directory of absolute paths ("/a/b/x", "/a/c/y" -> "/a"); pure, tested.
std::string common_directory(const std::vector<std::string>& absolute_files);

}  // namespace btrdedupe
