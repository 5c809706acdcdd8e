// MemoryBtrfs's subvolume ground (tests/unit/memory_btrfs.h): its one subvolume, the top
// level, mounted at its root directory and nowhere else.
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <deque>

#include "src/read/subvolume_queue_scan.h"
#include "tests/unit/memory_btrfs.h"

namespace btrdedupe::test {

btrfs::Result<void> MemoryBtrfs::Subvolumes::on_filesystem(const std::string& path) const {
  if (path == fs_.root_ || path.rfind(fs_.root_ + "/", 0) == 0) return {};
  return btrfs::Error{ENOENT, path + " is not on the in-memory btrfs at " + fs_.root_};
}

std::string MemoryBtrfs::filesystem_id(const std::string& path, bool want_file,
                                       std::string* why) {
  if (auto ok = subvolumes_.on_filesystem(path); !ok) {
    *why = ok.error().message();
    return "";
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || (want_file && !S_ISREG(st.st_mode))) {
    *why = path + ": not a regular file";
    return "";
  }
  return fs_info().fsid_string();
}

btrfs::Result<std::vector<btrfs::Subvolume>> MemoryBtrfs::Subvolumes::subvolumes(
    const std::string& path) {
  if (auto ok = on_filesystem(path); !ok) return ok.error();
  return std::vector<btrfs::Subvolume>{fs_.top()};
}

btrfs::Result<btrfs::FsInfo> MemoryBtrfs::Subvolumes::fs_info(const std::string& path) {
  if (auto ok = on_filesystem(path); !ok) return ok.error();
  return fs_.fs_info();
}

std::string MemoryBtrfs::Subvolumes::mount_table() {
  return "21 1 0:42 / " + fs_.root_ +
         " rw,relatime shared:9 - btrfs /dev/memory rw,subvolid=5,subvol=/\n";
}

btrfs::Result<OpenedSubvolumeRoot> MemoryBtrfs::Subvolumes::subvolume_root(
    const std::string& path) {
  if (auto ok = on_filesystem(path); !ok) return ok.error();
  if (path != fs_.root_)
    return btrfs::Error{EINVAL, path + " is not the top directory of a subvolume"};
  return OpenedSubvolumeRoot{kTop, fs_.fs_info().fsid_string()};
}

// As scan_subvolumes reads them: each a root, no nested subvolume followed.
btrfs::Result<ScanResult> MemoryBtrfs::Subvolumes::scan(
    const std::string& fs_path, const std::vector<SubvolumeRoot>& subvolumes,
    const ScanOptions& options) {
  if (auto ok = on_filesystem(fs_path); !ok) return ok.error();
  ScanResult out;
  out.fs = fs_.fs_info();
  std::deque<Work> queue;
  for (const auto& sv : subvolumes) {
    if (sv.id != kTop) return btrfs::Error{ENOENT, "no subvolume " + std::to_string(sv.id)};
    queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, "", PathTable::kRoot,
                     static_cast<uint32_t>(out.roots.size())});
    out.roots.push_back({sv.path, false});
  }
  ScanOptions flat = options;
  flat.recursive = false;
  if (auto ok = scan_queue(fs_.tree_, std::move(queue), {fs_.top()}, 0, flat, out); !ok)
    return ok.error();
  return out;
}

}  // namespace btrdedupe::test
