#include "btrfs/unnamed_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>

#include <cerrno>
#include <vector>

namespace btrfs {
namespace {

constexpr const char* kCompressionXattr = "btrfs.compression";

}  // namespace

Result<Fd> open_unnamed_file(int dir_fd) {
  const int fd = ::openat(dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("O_TMPFILE");
  return Fd(fd);
}

Result<unsigned> inode_attributes(int fd) {
  int flags = 0;  // the ioctl is documented with long but the kernel reads an int
  if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return errno_error("FS_IOC_GETFLAGS");
  return static_cast<unsigned>(flags);
}

Result<void> set_inode_attributes(int fd, unsigned flags) {
  int value = static_cast<int>(flags);
  if (::ioctl(fd, FS_IOC_SETFLAGS, &value) != 0) return errno_error("FS_IOC_SETFLAGS");
  return {};
}

Result<std::optional<std::string>> compression_property(int fd) {
  std::vector<char> buf(64);
  const ssize_t n = ::fgetxattr(fd, kCompressionXattr, buf.data(), buf.size());
  if (n < 0 && errno == ENODATA) return std::optional<std::string>();
  if (n < 0) return errno_error(std::string("getxattr ") + kCompressionXattr);
  return std::optional<std::string>(std::string(buf.data(), static_cast<size_t>(n)));
}

Result<void> set_compression_property(int fd, const std::optional<std::string>& value) {
  if (!value) {
    if (::fremovexattr(fd, kCompressionXattr) != 0 && errno != ENODATA)
      return errno_error(std::string("removexattr ") + kCompressionXattr);
    return {};
  }
  if (::fsetxattr(fd, kCompressionXattr, value->data(), value->size(), 0) != 0)
    return errno_error(std::string("setxattr ") + kCompressionXattr);
  return {};
}

}  // namespace btrfs
