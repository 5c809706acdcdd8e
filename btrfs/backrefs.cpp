#include "btrfs/backrefs.h"

#include <linux/btrfs.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace btrfs {
namespace {

constexpr uint64_t kInitialBufferBytes = 64 * 1024;
// LOGICAL_INO_V2 silently caps its buffer here (fs/btrfs/ioctl.c).
constexpr uint64_t kMaxLogicalInoBytes = 16 * 1024 * 1024;
// INO_PATHS silently caps its buffer at 4 KiB (measured on 6.18): a bigger one gains nothing.
constexpr uint64_t kInoPathsBytes = 4096;

// A struct btrfs_data_container in 8-byte aligned storage, handed to the kernel by address.
class DataContainer {
 public:
  explicit DataContainer(uint64_t bytes)
      : storage_((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t)) {}

  uint64_t bytes() const { return storage_.size() * sizeof(uint64_t); }
  uint64_t address() { return reinterpret_cast<uintptr_t>(storage_.data()); }
  const btrfs_data_container& header() const {
    return *reinterpret_cast<const btrfs_data_container*>(storage_.data());
  }
  // val[] follows the 16-byte header.
  const uint64_t* values() const {
    return storage_.data() + sizeof(btrfs_data_container) / sizeof(uint64_t);
  }
  uint64_t value_capacity() const {
    return storage_.size() - sizeof(btrfs_data_container) / sizeof(uint64_t);
  }
  // The end of the storage, for bounds checks on what the kernel wrote.
  const char* end() const { return reinterpret_cast<const char*>(storage_.data()) + bytes(); }

 private:
  std::vector<uint64_t> storage_;
};

uint64_t grown_size(uint64_t current, uint64_t missing, uint64_t limit) {
  return std::min(limit, std::max(current * 2, current + missing));
}

Result<void> logical_ino_call(int fd, uint64_t logical, bool ignore_offset,
                              DataContainer& out) {
  struct btrfs_ioctl_logical_ino_args args {};
  args.logical = logical;
  args.size = out.bytes();
  args.flags = ignore_offset ? BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET : 0;
  args.inodes = out.address();
  if (::ioctl(fd, BTRFS_IOC_LOGICAL_INO_V2, &args) != 0)
    return errno_error("LOGICAL_INO_V2 of disk address " + std::to_string(logical));
  return {};
}

Result<void> ino_paths_call(int fd, uint64_t inode, DataContainer& out) {
  struct btrfs_ioctl_ino_path_args args {};
  args.inum = inode;
  args.size = out.bytes();
  args.fspath = out.address();
  if (::ioctl(fd, BTRFS_IOC_INO_PATHS, &args) != 0)
    return errno_error("INO_PATHS of inode " + std::to_string(inode));
  return {};
}

}  // namespace

Result<std::vector<ExtentRef>> logical_ino(int fd, uint64_t logical, bool ignore_offset,
                                           bool* truncated) {
  uint64_t size = kInitialBufferBytes;
  for (;;) {
    DataContainer out(size);
    if (auto called = logical_ino_call(fd, logical, ignore_offset, out); !called)
      return called.error();
    const auto& head = out.header();
    const bool grow = head.bytes_missing > 0 && size < kMaxLogicalInoBytes;
    if (grow) {
      size = grown_size(size, head.bytes_missing, kMaxLogicalInoBytes);
      continue;
    }
    if (truncated) *truncated = head.bytes_missing > 0 || head.elem_missed > 0;
    // elem_cnt counts u64 values: three per reference.
    std::vector<ExtentRef> refs;
    const uint64_t count = std::min<uint64_t>(head.elem_cnt, out.value_capacity());
    refs.reserve(count / 3);
    for (uint64_t i = 0; i + 2 < count; i += 3)
      refs.push_back(ExtentRef{out.values()[i], out.values()[i + 1], out.values()[i + 2]});
    return refs;
  }
}

Result<std::vector<std::string>> inode_paths(int subvol_fd, uint64_t inode, bool* truncated) {
  DataContainer out(kInoPathsBytes);
  if (auto called = ino_paths_call(subvol_fd, inode, out); !called) return called.error();
  const auto& head = out.header();
  if (truncated) *truncated = head.elem_missed > 0;
  // val[i] is the offset of a NUL-terminated path, counted from the start of val[].
  const char* base = reinterpret_cast<const char*>(out.values());
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < head.elem_cnt; ++i) {
    if (out.values()[i] >= static_cast<uint64_t>(out.end() - base)) break;
    const char* p = base + out.values()[i];
    paths.emplace_back(p, strnlen(p, static_cast<size_t>(out.end() - p)));
  }
  return paths;
}

}  // namespace btrfs
