// known-pairs -dr [--threads=N] [--hashfile=F] DIR: the known-pairs floor of docs/targets.md.
//
// DIR holds two entries: two files, or two trees. Every regular file of the second (of 4 KiB
// or more) is deduped against the file at the same relative path in the first (same size
// only), whole, in 16 MiB ranges, each range read (both sides) just before its FIDEDUPERANGE
// call and dropped from the page cache after it, by 8 threads (or N), with a prefetch asking
// the next ranges into the page cache ahead of them and no hashing at all: what the kernel's
// compare and extent work cost on their own, the floor a dedupe tool that must also find
// the pairs can approach. Pairs go in the first file's inode order (about disk order for a
// copy made by cp). Takes the command line tools/bench-dedupe gives every tool (-r is
// refused with exit 2, --hashfile ignored). A maintainer's benchmark tool: not installed.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
constexpr uint64_t kRange = 16ull << 20;
constexpr unsigned kThreads = 8;
constexpr uint64_t kMinSize = 4096;

struct Range {
  size_t pair;
  uint64_t offset, length;
};

struct Totals {
  std::atomic<uint64_t> deduped{0}, differs{0}, errors{0};
};

class Descriptor {
 public:
  explicit Descriptor(const fs::path& p) : fd_(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads the range through a small buffer: the point is the page cache, not the bytes.
bool read_range(int fd, uint64_t offset, uint64_t length, std::vector<char>& buf) {
  buf.resize(1 << 20);
  for (uint64_t got = 0; got < length;) {
    const ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), length - got),
                              static_cast<off_t>(offset + got));
    if (n <= 0) return n == 0;
    got += static_cast<uint64_t>(n);
  }
  return true;
}

// One range: read both sides, then have the kernel compare and share them.
void dedupe_range(const fs::path& src, const fs::path& dst, const Range& r,
                  std::vector<char>& buf, Totals& totals) {
  const Descriptor s(src), d(dst);
  if (s.get() < 0 || d.get() < 0 || !read_range(s.get(), r.offset, r.length, buf) ||
      !read_range(d.get(), r.offset, r.length, buf)) {
    ++totals.errors;
    return;
  }
  auto arg = std::make_unique<char[]>(sizeof(file_dedupe_range) + sizeof(file_dedupe_range_info));
  auto* req = reinterpret_cast<file_dedupe_range*>(arg.get());
  for (uint64_t done = 0; done < r.length;) {
    std::memset(arg.get(), 0, sizeof(file_dedupe_range) + sizeof(file_dedupe_range_info));
    req->src_offset = r.offset + done;
    req->src_length = r.length - done;
    req->dest_count = 1;
    req->info[0].dest_fd = d.get();
    req->info[0].dest_offset = r.offset + done;
    if (::ioctl(s.get(), FIDEDUPERANGE, req) != 0 || req->info[0].status < 0) {
      ++totals.errors;
      return;
    }
    if (req->info[0].status == FILE_DEDUPE_RANGE_DIFFERS) {
      ++totals.differs;
      break;
    }
    if (req->info[0].bytes_deduped == 0) break;
    done += req->info[0].bytes_deduped;
    totals.deduped += req->info[0].bytes_deduped;
  }
  // As the tool's rounds do: under a memory cap, pages of calls already made would crowd
  // out those read for the next ones, and reclaiming them costs the kernel more than
  // dropping them here.
  ::posix_fadvise(s.get(), static_cast<off_t>(r.offset), static_cast<off_t>(r.length),
                  POSIX_FADV_DONTNEED);
  ::posix_fadvise(d.get(), static_cast<off_t>(r.offset), static_cast<off_t>(r.length),
                  POSIX_FADV_DONTNEED);
}

// Asks the ranges into the page cache in the workers' order, at most kAhead bytes (of each
// side) before the ranges they have done, so the device reads the next ranges while the
// workers' calls compare the current ones (what a dedupe tool's prefetch does; without it
// the loop waits on each read in turn and measures the disk's latency, not the kernel's work).
class Prefetch {
 public:
  Prefetch(const std::vector<std::pair<fs::path, fs::path>>& pairs,
           const std::vector<Range>& ranges)
      : pairs_(pairs), ranges_(ranges) {}
  void run() {
    uint64_t issued = 0;
    for (const Range& r : ranges_) {
      {
        std::unique_lock lock(mu_);
        room_.wait(lock, [&] { return issued < done_ + kAhead; });
      }
      for (const fs::path* p : {&pairs_[r.pair].first, &pairs_[r.pair].second}) {
        const Descriptor f(*p);
        if (f.get() >= 0)
          ::posix_fadvise(f.get(), static_cast<off_t>(r.offset), static_cast<off_t>(r.length),
                          POSIX_FADV_WILLNEED);
      }
      issued += r.length;
    }
  }
  void done(uint64_t bytes) {
    {
      const std::lock_guard lock(mu_);
      done_ += bytes;
    }
    room_.notify_one();
  }

 private:
  static constexpr uint64_t kAhead = 128ull << 20;
  const std::vector<std::pair<fs::path, fs::path>>& pairs_;
  const std::vector<Range>& ranges_;
  std::mutex mu_;
  std::condition_variable room_;
  uint64_t done_ = 0;
};

// The pairs: (first, second) by relative path, regular files of equal size.
std::vector<std::pair<fs::path, fs::path>> pairs_in(const fs::path& dir) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::vector<std::pair<fs::path, fs::path>> pairs;
  if (entries.size() != 2) return pairs;
  const fs::path& a = entries[0];
  const fs::path& b = entries[1];
  if (fs::is_regular_file(fs::symlink_status(a))) {
    pairs.emplace_back(a, b);
    return pairs;
  }
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    // Below a block, a file's data is mostly inline in the tree, which no dedupe shares.
    if (!e.is_regular_file() || e.is_symlink() || e.file_size() < kMinSize) continue;
    // By string, not fs::relative: that resolves every component of both paths again.
    const fs::path twin = b / e.path().string().substr(a.string().size() + 1);
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(twin, ec)) &&
        fs::file_size(twin, ec) == e.file_size())
      pairs.emplace_back(e.path(), twin);
  }
  // In inode order, which on a copy made by cp is about the order of its data on disk.
  std::vector<std::pair<ino_t, size_t>> by_inode;
  for (size_t i = 0; i < pairs.size(); ++i) {
    struct stat st {};
    by_inode.emplace_back(::stat(pairs[i].first.c_str(), &st) == 0 ? st.st_ino : 0, i);
  }
  std::sort(by_inode.begin(), by_inode.end());
  std::vector<std::pair<fs::path, fs::path>> ordered;
  ordered.reserve(pairs.size());
  for (const auto& [ino, i] : by_inode) ordered.push_back(std::move(pairs[i]));
  return ordered;
}

}  // namespace

int main(int argc, char** argv) {
  bool dedupe = false;
  unsigned threads = kThreads;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-dr" || arg == "-rd") dedupe = true;
    else if (arg.rfind("--hashfile=", 0) == 0) continue;
    else if (arg.rfind("--threads=", 0) == 0)
      threads = static_cast<unsigned>(std::strtoul(arg.c_str() + 10, nullptr, 10));
    else if (!arg.empty() && arg[0] != '-') dir = arg;
    else {
      std::fprintf(stderr, "known-pairs: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  if (!dedupe || dir.empty()) {
    std::fprintf(stderr, "usage: known-pairs -dr [--threads=N] [--hashfile=F] DIR\n");
    return 2;
  }
  const auto pairs = pairs_in(dir);
  std::vector<Range> ranges;
  for (size_t p = 0; p < pairs.size(); ++p) {
    const uint64_t size = fs::file_size(pairs[p].first);
    for (uint64_t off = 0; off < size; off += kRange)
      ranges.push_back({p, off, std::min(kRange, size - off)});
  }
  Totals totals;
  Prefetch ahead(pairs, ranges);
  std::jthread prefetcher([&] { ahead.run(); });
  std::atomic<size_t> next{0};
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < std::max(1u, threads); ++t)
    workers.emplace_back([&] {
      std::vector<char> buf;
      for (size_t i; (i = next.fetch_add(1)) < ranges.size();) {
        dedupe_range(pairs[ranges[i].pair].first, pairs[ranges[i].pair].second, ranges[i], buf,
                     totals);
        ahead.done(ranges[i].length);
      }
    });
  workers.clear();
  std::printf("known-pairs: %zu pairs, %zu ranges, %llu bytes deduped, %llu differ, %llu errors\n",
              pairs.size(), ranges.size(), static_cast<unsigned long long>(totals.deduped.load()),
              static_cast<unsigned long long>(totals.differs.load()),
              static_cast<unsigned long long>(totals.errors.load()));
  return totals.errors.load() ? 1 : 0;
}
