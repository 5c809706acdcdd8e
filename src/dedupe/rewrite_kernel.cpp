#include "src/dedupe/rewrite_kernel.h"

#include <linux/fs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "btrfs/extent_tree.h"
#include "btrfs/fiemap.h"
#include "btrfs/unnamed_file.h"

namespace btrdedupe {
namespace {

constexpr size_t kCopyChunk = 1 << 20;
// The chattr flags a copy takes from its file: nodatacow, and compression forced or off.
constexpr unsigned kMirroredFlags = FS_NOCOW_FL | FS_COMPR_FL | FS_NOCOMP_FL;

// Gives `copy` (still empty) the settings of `file`: the property first (setting it
// changes the compression flags), then the flags; both are read back, since a filesystem
// may accept a setting and ignore it. EINVAL when they still differ.
btrfs::Result<void> take_settings(int file, int copy) {
  auto property = btrfs::compression_property(file);
  if (!property) return property.error();
  auto inherited = btrfs::compression_property(copy);  // from the directory
  if (!inherited) return inherited.error();
  if (*property != *inherited)
    if (auto ok = btrfs::set_compression_property(copy, *property); !ok) return ok.error();
  auto want = btrfs::inode_attributes(file);
  if (!want) return want.error();
  auto have = btrfs::inode_attributes(copy);
  if (!have) return have.error();
  const unsigned flags = (*have & ~kMirroredFlags) | (*want & kMirroredFlags);
  if (flags != *have)
    if (auto ok = btrfs::set_inode_attributes(copy, flags); !ok) return ok.error();
  auto now = btrfs::inode_attributes(copy);
  if (!now) return now.error();
  auto now_property = btrfs::compression_property(copy);
  if (!now_property) return now_property.error();
  if ((*now & kMirroredFlags) != (*want & kMirroredFlags) || *now_property != *property)
    return btrfs::Error{EINVAL, "giving the copy the file's nodatacow and compression settings"};
  return {};
}

btrfs::Result<void> copy_bytes(int from, uint64_t offset, uint64_t length, int to) {
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(kCopyChunk, length)));
  for (uint64_t done = 0; done < length;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    const ssize_t n = ::pread(from, buf.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return btrfs::errno_error("reading the remainder");
    if (n == 0) return btrfs::Error{ESTALE, "reading the remainder: the file ends before it"};
    for (ssize_t put = 0; put < n;) {
      const ssize_t w = ::pwrite(to, buf.data() + put, static_cast<size_t>(n - put),
                                 static_cast<off_t>(done + static_cast<uint64_t>(put)));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return btrfs::errno_error("writing the copy");
      put += w;
    }
    done += static_cast<uint64_t>(n);
  }
  if (::fdatasync(to) != 0) return btrfs::errno_error("fdatasync of the copy");
  return {};
}

class KernelRewrite final : public RewriteKernel {
 public:
  void commit(int fs_fd) override { ::syncfs(fs_fd); }

  btrfs::Result<std::vector<btrfs::ExtentRef>> extent_references(int fs_fd,
                                                                 uint64_t bytenr) override {
    bool truncated = false;
    auto refs = btrfs::logical_ino(fs_fd, bytenr, true, &truncated);
    if (refs && truncated) return btrfs::Error{E2BIG, "LOGICAL_INO: too many references"};
    return refs;
  }

  btrfs::Result<btrfs::Fd> unnamed_copy(int dir_fd, int file_fd, uint64_t offset,
                                        uint64_t length) override {
    auto copy = btrfs::open_unnamed_file(dir_fd);
    if (!copy) return copy.error();
    if (auto ok = take_settings(file_fd, copy->get()); !ok) return ok.error();
    if (auto ok = copy_bytes(file_fd, offset, length, copy->get()); !ok) return ok.error();
    return copy;
  }

  btrfs::Result<uint64_t> disk_bytes(int file_fd, uint64_t offset, uint64_t length,
                                     uint32_t sectorsize) override {
    auto map = btrfs::fiemap(file_fd, offset, length, true);
    if (!map) return map.error();
    uint64_t bytes = 0;
    for (const auto& e : *map) {
      if (e.encoded()) {
        auto size = btrfs::data_extent_disk_bytes(file_fd, e.physical);
        if (!size) return size.error();
        bytes += *size;
        continue;
      }
      const uint64_t start = std::max(e.logical, offset);
      const uint64_t end = std::min(e.logical + e.length, offset + length);
      if (end > start) bytes += (end - start + sectorsize - 1) / sectorsize * sectorsize;
    }
    return bytes;
  }

  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) override {
    return btrfs::dedupe_range(src_fd, src_offset, length, destinations);
  }
};

}  // namespace

RewriteKernel::~RewriteKernel() = default;

RewriteKernel& kernel_rewrite() {
  static KernelRewrite kernel;
  return kernel;
}

}  // namespace btrdedupe
