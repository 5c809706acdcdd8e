// btrdedupe --follow as a user runs it: a child process following the test's btrfs, its
// hashfile beside the image (outside the followed filesystem), its status file read as
// --status reads it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/follow/follow_status.h"
#include "tests/btrfs/reliability_support.h"

namespace btrdedupe::test {

class FollowTest : public ReliabilityTest {
 protected:
  // Beside the image unless a test puts it on the followed filesystem (hashfile_in_fs_).
  std::string hashfile() const {
    return hashfile_in_fs_ ? path("hashes") : fs().image_file() + ".hashes";
  }
  std::string output_file() const { return fs().image_file() + ".follow-out"; }

  // A follower of the whole filesystem; settles and polls each second unless `extra` says.
  // It does not yield to others' stalls unless `yield`: tests running beside it (ctest -j)
  // would hold it back for as long as they run.
  std::unique_ptr<Child> start(const std::vector<std::string>& extra = {}, bool yield = false) {
    std::vector<std::string> argv{BTRDEDUPE_BINARY, "--follow", "--hashfile=" + hashfile(),
                                  "--settle=1", "--poll-interval=1"};
    if (!yield) argv.push_back("--no-yield");
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(path(""));
    auto child = std::make_unique<Child>(argv, output_file());
    pid_ = child->pid();
    return child;
  }
  // The status file as the follower last wrote it (a default one before it did).
  FollowStatus status() const {
    auto s = read_follow_status(follow_status_path(hashfile()));
    return s ? *s : FollowStatus{};
  }
  // Polls `done` every 100 ms for up to `seconds`.
  static bool wait_until(const std::function<bool()>& done, double seconds = 60) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return done();
  }
  // The follower started last finished `cycles` runs and waits for a change.
  bool waiting_after(uint64_t cycles, double seconds = 60) {
    return wait_until([&] {
      const auto s = status();
      return s.pid == pid_ && s.state == "waiting" && s.cycles >= cycles &&
             s.waiting_for == "a change";
    }, seconds);
  }
  // btrdedupe --status (stdout and stderr).
  CommandResult follow_status(const std::string& extra = "") {
    return run_command(std::string(BTRDEDUPE_BINARY) + " --status --hashfile=" +
                       shell_quote(hashfile()) + " " + extra);
  }
  // Random files d/f1..f<n> of `bytes` each.
  void random_tree(const std::string& dir, int n, size_t bytes) {
    sh("mkdir -p " + shell_quote(path(dir)) + " && cd " + shell_quote(path(dir)) +
       " && for i in $(seq 1 " + std::to_string(n) + "); do head -c " + std::to_string(bytes) +
       " /dev/urandom > f$i; done && sync");
  }
  // An unshared copy of a directory arriving (cp -a keeps the mtimes).
  void arrive(const std::string& from, const std::string& to) {
    sh("cp -a --reflink=never " + shell_quote(path(from)) + " " + shell_quote(path(to)) +
       " && sync");
  }
  // Data used by `btrfs filesystem df` after a sync.
  uint64_t data_used() {
    const std::string df = sh("btrfs filesystem sync " + shell_quote(path("")) +
                              " >/dev/null && btrfs filesystem df -b " + shell_quote(path("")));
    const auto at = df.find("used=");
    return at == std::string::npos ? 0 : std::stoull(df.substr(at + 5));
  }
  bool shared(const std::string& rel) {
    return sh("filefrag -v " + shell_quote(path(rel))).find("shared") != std::string::npos;
  }
  static bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
  }

  bool hashfile_in_fs_ = false;

 private:
  pid_t pid_ = 0;   // of the follower started last
};

}  // namespace btrdedupe::test
