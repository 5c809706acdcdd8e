// Owning file descriptor: closed exactly once, movable, never copied.
#pragma once

#include <string>

#include "btrfs/result.h"

namespace btrfs {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();

  // open(2) with O_CLOEXEC added; the error names the path. mode applies with O_CREAT.
  static Result<Fd> open(const std::string& path, int flags, unsigned mode = 0644);
  // openat(2) relative to dir, O_CLOEXEC added.
  static Result<Fd> open_at(int dir, const std::string& relative, int flags);

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset();

 private:
  int fd_ = -1;
};

}  // namespace btrfs
