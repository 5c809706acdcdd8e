// IncrementalScan's sources outside its roots (declared in incremental_scan.h): the files a
// side run takes as sources only, and the top directories it opens them through. Apart
// from the scan's own files because reaching a subvolume no root is in has rules of its own.
#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "btrfs/subvolume.h"
#include "src/read/incremental_scan.h"
#include "src/read/path_table.h"

namespace btrdedupe {

namespace {

// `path` when it is the top directory of `subvolume` itself, proven, not guessed (not a
// bind mount's look-alike); nullopt otherwise.
std::optional<std::string> proven_top(const std::string& path, uint64_t subvolume) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) return std::nullopt;
  struct stat st {};
  auto id = btrfs::subvolume_id(fd->get());
  if (::fstat(fd->get(), &st) != 0 || st.st_ino != BTRFS_FIRST_FREE_OBJECTID || !id ||
      *id != subvolume)
    return std::nullopt;
  return path;
}

}  // namespace

btrfs::Result<std::optional<std::string>> IncrementalScan::top_from(const std::string& root,
                                                                    uint64_t subvolume,
                                                                    uint64_t top_inode,
                                                                    const std::string& prefix) {
  char* real = ::realpath(root.c_str(), nullptr);
  if (!real) return std::optional<std::string>{};
  std::string path = real;
  std::free(real);
  if (top_inode == BTRFS_FIRST_FREE_OBJECTID) {
    if (!prefix.empty()) path += "/" + prefix;
  } else {
    // A root inside the subvolume: its path ends with the root's path below the top.
    auto below = inodes(subvolume).directory_below(top_inode, BTRFS_FIRST_FREE_OBJECTID);
    if (!below) return below.error();
    if (!*below || (*below)->empty()) return std::optional<std::string>{};
    const std::string tail = "/" + **below;
    if (path.size() < tail.size() || path.compare(path.size() - tail.size(), tail.size(), tail))
      return std::optional<std::string>{};
    path.resize(path.size() - tail.size());
    if (path.empty()) path = "/";
  }
  return proven_top(path, subvolume);
}

btrfs::Result<std::optional<std::string>> IncrementalScan::top_directory(uint64_t subvolume,
                                                                         int depth) {
  for (const Place& place : places_) {
    if (place.subvolume != subvolume) continue;
    auto top = top_from(roots_[place.root].path, subvolume, place.top_inode, place.prefix);
    if (!top || *top) return top;
  }
  for (const SourceRoot& source : source_roots_) {
    if (source.subvolume != subvolume) continue;
    auto top = top_from(source.path, subvolume, source.top_inode, "");
    if (!top || *top) return top;
  }
  // Nested: below its parent's top directory, where the parent holds it.
  const auto sv = std::find_if(all_.begin(), all_.end(),
                               [&](const btrfs::Subvolume& s) { return s.id == subvolume; });
  constexpr int kDeepestNesting = 64;
  if (sv == all_.end() || sv->parent_id == 0 || depth == kDeepestNesting)
    return std::optional<std::string>{};
  auto parent = top_directory(sv->parent_id, depth + 1);
  if (!parent || !*parent) return parent;
  auto dir = inodes(sv->parent_id).directory_below(sv->dir_id, BTRFS_FIRST_FREE_OBJECTID);
  if (!dir) return dir.error();
  if (!*dir) return std::optional<std::string>{};
  const std::string below = join_relative(**dir, basename_of(sv->path));
  return proven_top(**parent == "/" ? "/" + below : **parent + "/" + below, subvolume);
}

bool IncrementalScan::has_subvolume(uint64_t subvolume) const {
  return std::any_of(all_.begin(), all_.end(),
                     [&](const btrfs::Subvolume& s) { return s.id == subvolume; });
}

void IncrementalScan::add_source_roots(const std::vector<std::string>& roots) {
  for (const auto& root : roots) {
    auto fd = btrfs::Fd::open(root, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (!fd) continue;  // gone since: its subvolumes may still be reached otherwise
    struct stat st {};
    auto id = btrfs::subvolume_id(fd->get());
    if (::fstat(fd->get(), &st) != 0 || !id) continue;
    source_roots_.push_back({*id, st.st_ino, root});
  }
}

btrfs::Result<IncrementalScan::Outcome> IncrementalScan::add_outside(ScanResult& out,
                                                                     uint64_t subvolume,
                                                                     uint64_t inode,
                                                                     const InodeState& state) {
  if (!state.item.is_regular() || state.parent == 0) return Outcome::OutOfScope;
  if (state.item.size < options_.min_file_size) return Outcome::OutOfScope;
  auto root = outside_roots_.find(subvolume);
  if (root == outside_roots_.end()) {
    auto top = top_directory(subvolume);
    if (!top) return top.error();
    std::optional<uint32_t> index;
    if (*top) {
      index = static_cast<uint32_t>(out.roots.size());
      out.roots.push_back({**top, false});
    }
    root = outside_roots_.emplace(subvolume, index).first;
  }
  if (!root->second) return Outcome::OutOfScope;
  auto dir = inodes(subvolume).directory_below(state.parent, BTRFS_FIRST_FREE_OBJECTID);
  if (!dir) return dir.error();
  if (!*dir) return Outcome::OutOfScope;
  if (state.extents.empty()) return Outcome::NoData;
  append_file(out, subvolume, inode, state, *root->second,
              out.paths.add(PathTable::kRoot, join_relative(**dir, state.name)))
      .outside_roots = true;
  return Outcome::Added;
}

}  // namespace btrdedupe
