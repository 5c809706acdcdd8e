// Bringing a file range into the page cache; why this is apart from the dedupe run:
// src/dedupe/range_prefetch.h.
#include "src/dedupe/range_prefetch.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace btrdedupe {
namespace {

// cachestat(2)'s types and number, which Debian 12's kernel headers (6.1) do not have.
// 451 is its number in the common table; architectures with offset tables (mips, alpha)
// go without it unless their headers name it.
#if defined(__NR_cachestat)
constexpr long kCachestatSyscall = __NR_cachestat;
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__arm__) || \
    defined(__powerpc64__) || defined(__s390x__) || defined(__riscv)
constexpr long kCachestatSyscall = 451;
#else
constexpr long kCachestatSyscall = -1;
#endif
struct CachestatRange {
  uint64_t off, len;
};
struct Cachestat {
  uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

}  // namespace

uint64_t prefetch_range(Prefetch how, int fd, uint64_t offset, uint64_t length,
                        std::vector<uint8_t>& buf) {
  switch (how) {
    case Prefetch::None:
      return 0;
    case Prefetch::Readahead:
      return ::readahead(fd, static_cast<off64_t>(offset), length) == 0 ? length : 0;
    case Prefetch::Fadvise:
      return ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length),
                             POSIX_FADV_WILLNEED) == 0
                 ? length
                 : 0;
    case Prefetch::Read:
      break;
  }
  uint64_t got = 0;
  while (got < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - got));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<uint64_t>(n);
  }
  return got;
}

std::optional<bool> range_cached(int fd, uint64_t offset, uint64_t length) {
  if (length == 0) return false;
  if (kCachestatSyscall < 0) return std::nullopt;
  CachestatRange range{offset, length};
  Cachestat stat{};
  if (::syscall(kCachestatSyscall, fd, &range, &stat, 0) != 0) return std::nullopt;
  return stat.nr_cache > 0;
}

void release_range(int fd, uint64_t offset, uint64_t length) {
  ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length),
                  POSIX_FADV_DONTNEED);
}

}  // namespace btrdedupe
