// A walk's kernel (src/read/walk_kernel.h) that answers as a test says, for walks of real
// temporary directories without btrfs: the filesystem's kind and identity (others on the
// devices named), FIEMAP's map of each inode, and the subvolume of each inode or device.
#pragma once

#include <linux/fiemap.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/read/walk_kernel.h"

namespace btrdedupe::test {

inline btrfs::FsInfo walked_info(uint8_t id) {
  btrfs::FsInfo info;
  info.fsid = {0x77, 0x61, 0x6c, 0x6b, id};  // "walk" and an id
  info.num_devices = 1;
  info.sectorsize = 4096;
  info.csum_type = btrfs::CsumType::Xxhash64;
  info.csum_size = 8;
  return info;
}

class ScriptedWalkKernel final : public WalkKernel {
 public:
  struct Subvolume {
    uint64_t id = 0;
    bool read_only = false;
  };

  btrfs::FsKind kind = btrfs::FsKind::Btrfs;
  std::string other_name = "ext2/ext3";  // what statfs names an Other kind
  bool kind_fails = false;
  std::map<dev_t, btrfs::FsKind> kind_of_device;
  std::optional<btrfs::FsInfo> info = walked_info(1);  // nullopt: the question fails
  std::map<dev_t, btrfs::FsInfo> info_of_device;
  // FIEMAP by inode; an inode not named gets `any_extents`, or FIEMAP fails (EOPNOTSUPP).
  std::map<uint64_t, std::vector<btrfs::FiemapExtent>> extents_of_inode;
  std::optional<std::vector<btrfs::FiemapExtent>> any_extents;
  // The subvolume by inode, else by device; neither: the ioctls fail (ENOTTY).
  std::map<uint64_t, Subvolume> subvolume_of_inode;
  std::map<dev_t, Subvolume> subvolume_of_device;
  mutable std::vector<dev_t> subvolume_asked_on;  // the device of each subvolume_id call

  btrfs::Result<btrfs::FsKind> filesystem_kind(int fd, std::string* name) const override {
    if (kind_fails) {  // as fstatfs fails: its callers name the path with errno
      errno = EIO;
      return btrfs::Error{EIO, "statfs"};
    }
    const auto found = kind_of_device.find(stat_of(fd).st_dev);
    const btrfs::FsKind k = found == kind_of_device.end() ? kind : found->second;
    if (k == btrfs::FsKind::Other && name) *name = other_name;
    return k;
  }
  btrfs::Result<btrfs::FsInfo> walked_fs_info(int fd, btrfs::FsKind) const override {
    const auto found = info_of_device.find(stat_of(fd).st_dev);
    if (found != info_of_device.end()) return found->second;
    if (!info) return btrfs::Error{ENOTTY, "FS_IOC_GETFSUUID"};
    return *info;
  }
  btrfs::Result<std::vector<btrfs::FiemapExtent>> fiemap(int fd) const override {
    const auto found = extents_of_inode.find(stat_of(fd).st_ino);
    if (found != extents_of_inode.end()) return found->second;
    if (any_extents) return *any_extents;
    return btrfs::Error{EOPNOTSUPP, "FIEMAP"};
  }
  btrfs::Result<uint64_t> subvolume_id(int fd) const override {
    subvolume_asked_on.push_back(stat_of(fd).st_dev);
    auto s = subvolume_of(fd);
    if (!s) return s.error();
    return s->id;
  }
  btrfs::Result<bool> subvolume_read_only(int fd) const override {
    auto s = subvolume_of(fd);
    if (!s) return s.error();
    return s->read_only;
  }

 private:
  static struct stat stat_of(int fd) {
    struct stat st {};
    ::fstat(fd, &st);
    return st;
  }
  btrfs::Result<Subvolume> subvolume_of(int fd) const {
    const struct stat st = stat_of(fd);
    if (auto i = subvolume_of_inode.find(st.st_ino); i != subvolume_of_inode.end())
      return i->second;
    if (auto d = subvolume_of_device.find(st.st_dev); d != subvolume_of_device.end())
      return d->second;
    return btrfs::Error{ENOTTY, "subvolume id"};
  }
};

// One FIEMAP extent.
inline btrfs::FiemapExtent mapped(uint64_t logical, uint64_t physical, uint64_t length,
                                  uint32_t flags = 0) {
  return btrfs::FiemapExtent{logical, physical, length, flags};
}

}  // namespace btrdedupe::test
