#include "tests/btrfs/reliability_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "src/report/text_report.h"

namespace btrdedupe::test {
namespace {

struct Walker {
  ReliabilityCounts* counts;
  const std::function<bool(const std::string&)>& skip;
  TreeState out;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 20);

  void file(int dir, const std::string& name, const std::string& rel) {
    const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    EXPECT_GE(fd, 0) << "open " << printable_path(rel) << ": " << std::strerror(errno);
    if (fd < 0) return;
    struct stat st {};
    ::fstat(fd, &st);
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    uint64_t total = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      EXPECT_GE(n, 0) << "read " << printable_path(rel) << ": " << std::strerror(errno);
      if (n <= 0) break;
      crypto_hash_sha256_update(&h, buf.data(), static_cast<unsigned long long>(n));
      total += static_cast<uint64_t>(n);
    }
    ::close(fd);
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&h, digest);
    char hex[2 * crypto_hash_sha256_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    FileState s;
    s.size = static_cast<uint64_t>(st.st_size);
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    s.sha256 = hex;
    out[rel] = s;
    if (counts) {
      ++counts->files_checked;
      counts->bytes_verified += total;
    }
  }

  void directory(int fd, const std::string& rel) {
    DIR* d = ::fdopendir(fd);  // owns fd from here
    if (!d) {
      ADD_FAILURE() << "fdopendir " << printable_path(rel) << ": " << std::strerror(errno);
      ::close(fd);
      return;
    }
    std::vector<std::pair<std::string, unsigned char>> entries;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      entries.emplace_back(name, e->d_type);
    }
    for (const auto& [name, type] : entries) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      if (skip && skip(child)) continue;
      unsigned char t = type;
      if (t == DT_UNKNOWN) {
        struct stat st {};
        if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
      }
      if (t == DT_REG) {
        file(::dirfd(d), name, child);
      } else if (t == DT_DIR) {
        const int sub = ::openat(::dirfd(d), name.c_str(),
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        EXPECT_GE(sub, 0) << "open dir " << printable_path(child) << ": " << std::strerror(errno);
        if (sub >= 0) directory(sub, child);
      }
    }
    ::closedir(d);
  }
};

}  // namespace

TreeState tree_state(const std::string& dir, ReliabilityCounts* counts,
                     const std::function<bool(const std::string&)>& skip) {
  static const int sodium = sodium_init();
  (void)sodium;
  Walker w{counts, skip, {}};
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << "open " << dir << ": " << std::strerror(errno);
  if (fd >= 0) w.directory(fd, "");
  return std::move(w.out);
}

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  char hex[2 * crypto_hash_sha256_BYTES + 1];
  sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
  return hex;
}

std::string state_diff(const TreeState& before, const TreeState& after) {
  std::ostringstream out;
  for (const auto& [path, s] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      out << "gone: " << printable_path(path) << "\n";
    } else if (!(it->second == s)) {
      out << "changed: " << printable_path(path) << " size " << s.size << "->" << it->second.size
          << " mtime " << s.mtime_ns << "->" << it->second.mtime_ns << " sha256 "
          << s.sha256.substr(0, 12) << "->" << it->second.sha256.substr(0, 12) << "\n";
    }
  }
  for (const auto& [path, s] : after)
    if (!before.count(path)) out << "new: " << printable_path(path) << "\n";
  return out.str();
}

Child::Child(const std::vector<std::string>& argv, const std::string& output_file)
    : output_file_(output_file) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int out = ::open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(out, 0) << output_file << ": " << std::strerror(errno);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, STDIN_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  EXPECT_GT(pid_, 0) << "fork: " << std::strerror(errno);
  if (out >= 0) ::close(out);
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    wait();
  }
}

bool Child::running() {
  if (pid_ <= 0 || reaped_) return false;
  const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void Child::kill(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

int Child::wait() {
  if (pid_ <= 0) return -1;
  while (!reaped_) {
    const pid_t r = ::waitpid(pid_, &status_, 0);
    if (r == pid_) reaped_ = true;
    else if (r < 0 && errno != EINTR) return -1;
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return -WTERMSIG(status_);
  return -1;
}

std::string Child::output() const { return read_file(output_file_); }

void print_counts(const ReliabilityCounts& counts) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("[reliability] %s.%s faults=%llu runs_killed=%llu files_checked=%llu "
              "bytes_verified=%llu\n",
              info->test_suite_name(), info->name(),
              static_cast<unsigned long long>(counts.faults),
              static_cast<unsigned long long>(counts.runs_killed),
              static_cast<unsigned long long>(counts.files_checked),
              static_cast<unsigned long long>(counts.bytes_verified));
}

void ReliabilityTest::TearDown() {
  print_counts(counts_);
  BtrfsTest::TearDown();
}

TreeState ReliabilityTest::state(const std::string& rel,
                                 const std::function<bool(const std::string&)>& skip) {
  ::sync();
  return tree_state(path(rel), &counts_, skip);
}

void ReliabilityTest::expect_unchanged(const TreeState& before, const std::string& rel,
                                       const std::function<bool(const std::string&)>& skip) {
  const TreeState after = state(rel, skip);
  EXPECT_EQ(state_diff(before, after), "") << "the data-safety invariant does not hold under "
                                           << path(rel);
  EXPECT_FALSE(before.empty()) << "no file to check under " << path(rel);
}

CommandResult ReliabilityTest::btrdedupe(const std::string& args) {
  return run_command(std::string(BTRDEDUPE_BINARY) + " " + args);
}

long long net_change(const std::string& output) {
  const std::string key = "net change in shared extents of: ";
  const auto at = output.rfind(key);
  return at == std::string::npos ? -1 : std::stoll(output.substr(at + key.size()));
}

}  // namespace btrdedupe::test
