#include "btrfs/fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace btrfs {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() { reset(); }

int Fd::release() { return std::exchange(fd_, -1); }

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<Fd> Fd::open(const std::string& path, int flags, unsigned mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) return errno_error("open " + path);
  return Fd(fd);
}

Result<Fd> Fd::open_at(int dir, const std::string& relative, int flags) {
  int fd = ::openat(dir, relative.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno_error("open " + relative);
  return Fd(fd);
}

}  // namespace btrfs
