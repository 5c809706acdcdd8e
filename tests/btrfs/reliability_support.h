// Shared by the reliability tests (tests/btrfs/reliability_*_test.cpp, docs/reliability.md):
// the data-safety invariant, the binary as a child process, and the tallies the docs quote.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {

// What one test did, printed on teardown as one line that tools/reliability-counts sums:
// "[reliability] <test> faults=N runs_killed=N files_checked=N bytes_verified=N".
struct ReliabilityCounts {
  uint64_t faults = 0;          // faults injected (a file changed under the run, a full disk, ...)
  uint64_t runs_killed = 0;     // btrdedupe runs ended by SIGKILL in the middle
  uint64_t files_checked = 0;   // file states taken (sha256 + mtime)
  uint64_t bytes_verified = 0;  // bytes hashed for them
};

// Prints the [reliability] line of the running test (ReliabilityTest does so on teardown).
void print_counts(const ReliabilityCounts& counts);

struct FileState {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string sha256;  // hex
  bool operator==(const FileState& o) const {
    return size == o.size && mtime_ns == o.mtime_ns && sha256 == o.sha256;
  }
};
// Regular files below a directory: path relative to it -> state.
using TreeState = std::map<std::string, FileState>;

// Every regular file below `dir`, read through openat() from directory fds, so trees deeper
// than PATH_MAX and names with any bytes are read too. Symlinks are not followed.
// `skip` (optional) leaves out relative paths for which it returns true.
TreeState tree_state(const std::string& dir, ReliabilityCounts* counts,
                     const std::function<bool(const std::string&)>& skip = {});

std::string sha256_hex(const std::string& bytes);

// The number of duperemove's summary line (bytes newly in shared extents, counted in every
// file that holds them: a deduped pair counts twice); -1 when there is no such line.
long long net_change(const std::string& output);

// The differences between two states, one line each ("" when equal), paths escaped.
std::string state_diff(const TreeState& before, const TreeState& after);

// A child process with stdout and stderr in a file, for runs that tests kill or overlap.
class Child {
 public:
  // Starts argv[0] (a path) with argv; output goes to `output_file`.
  Child(const std::vector<std::string>& argv, const std::string& output_file);
  ~Child();  // kills (SIGKILL) and reaps a child still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void kill(int sig);
  // Waits for the end: exit code, or -signal when killed by one.
  int wait();
  std::string output() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
  std::string output_file_;
};

class ReliabilityTest : public BtrfsTest {
 protected:
  void TearDown() override;

  // The invariant's two halves: take the state, then expect it unchanged.
  TreeState state(const std::string& rel = "",
                  const std::function<bool(const std::string&)>& skip = {});
  void expect_unchanged(const TreeState& before, const std::string& rel = "",
                        const std::function<bool(const std::string&)>& skip = {});

  // The btrdedupe binary, run to the end (stdout and stderr together).
  CommandResult btrdedupe(const std::string& args);

  void injected(uint64_t faults = 1) { counts_.faults += faults; }
  void killed_run() { ++counts_.runs_killed; }

  ReliabilityCounts counts_;
};

}  // namespace btrdedupe::test
