// Privileges and concurrent runs: an unprivileged run stops at once saying root is needed;
// two runs on one hashfile (the second fails at once); two runs on one filesystem with
// different hashfiles at the same time (both finish, no file changes).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <linux/btrfs_tree.h>
#include <thread>

#include "btrfs/fd.h"
#include "btrfs/tree_search.h"
#include "tests/btrfs/reliability_support.h"

namespace btrdedupe::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}


constexpr uid_t kNobody = 65534;

class PrivilegeTest : public ReliabilityTest {
 protected:
  void SetUp() override {
    ReliabilityTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // The work directory is 0700: let nobody reach the mount point, so what fails is the
    // privilege, not the path.
    sh("chmod 755 " + shell_quote(path("") + "/.."));
    sh("cd " + shell_quote(path("")) +
       " && head -c 1048576 /dev/urandom > a && cp --reflink=never a b && sync");
  }
};

// Without root the run walks the paths (src/read/path_walk.h): root's files, readable but
// not writable by the caller, are sources only, so nothing is deduped and nothing changes.
// Asked for the tree reader, it stops at once saying root is needed.
TEST_F(PrivilegeTest, UnprivilegedRunDedupesNothingItMayNotWriteAndTheTreeReaderNeedsRoot) {
  const auto before = state();
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups " +
                                std::string(BTRDEDUPE_BINARY);
  auto r = run_command(as_nobody + " -dr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "reading by paths (tree search needs root)")) << r.output;
  EXPECT_TRUE(has(r.output, "2 files you may not write (sources only")) << r.output;
  EXPECT_EQ(net_change(r.output), 0) << r.output;
  const auto t = Clock::now();
  r = run_command(as_nobody + " -dr --reader=tree " + shell_quote(path("")));
  const double seconds = std::chrono::duration<double>(Clock::now() - t).count();
  injected();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "needs root: CAP_SYS_ADMIN is required to search the filesystem's "
                            "trees"))
      << r.output;
  EXPECT_TRUE(has(r.output, path(""))) << r.output;
  EXPECT_EQ(net_change(r.output), 0) << r.output;
  EXPECT_LT(seconds, 2.0);
  expect_unchanged(before);
}

// The tree search itself (btrfs/tree_search.cpp) says so too, whoever calls it.
TEST_F(PrivilegeTest, TreeSearchWithoutCapSysAdminSaysRootIsNeeded) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string message = "setresuid failed";
    if (::setresgid(kNobody, kNobody, kNobody) == 0 && ::setresuid(kNobody, kNobody, kNobody) == 0) {
      auto fd = btrfs::Fd::open(path(""), O_RDONLY | O_DIRECTORY);
      if (!fd) {
        message = fd.error().message();
      } else {
        btrfs::SearchKey key;
        key.tree_id = BTRFS_FS_TREE_OBJECTID;
        btrfs::TreeSearch search(fd->get(), key);
        auto next = search.next();
        message = next ? "the search worked unprivileged" : next.error().message();
      }
    }
    const ssize_t ignored = ::write(pipe_fds[1], message.data(), message.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) message.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  injected();
  EXPECT_TRUE(has(message, "BTRFS_IOC_TREE_SEARCH_V2")) << message;
  EXPECT_TRUE(has(message, "needs root: CAP_SYS_ADMIN is required to search the filesystem's "
                           "trees"))
      << message;
  EXPECT_TRUE(has(message, "Operation not permitted")) << message;
}

class ConcurrentRunsTest : public ReliabilityTest {
 protected:
  void SetUp() override {
    ReliabilityTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // 40 groups of 3 copies of 1 MiB: long enough a run to overlap another.
    sh("mkdir " + shell_quote(path("t")) + " && cd " + shell_quote(path("t")) +
       " && for g in $(seq -w 1 40); do mkdir g$g && head -c 1048576 /dev/urandom > g$g/c1"
       " && cp --reflink=never g$g/c1 g$g/c2 && cp --reflink=never g$g/c1 g$g/c3; done && sync");
    work_ = fs().image_file();
  }
  void TearDown() override {
    run_command("rm -f " + shell_quote(work_) + ".*");
    ReliabilityTest::TearDown();
  }
  std::unique_ptr<Child> start(const std::vector<std::string>& args, const std::string& out) {
    std::vector<std::string> argv{BTRDEDUPE_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<Child>(argv, work_ + "." + out);
  }
  // Waits until the run's --progress=json events show `phase`; false when it ended first.
  bool wait_for_phase(Child& run, const std::string& out, const std::string& phase) {
    for (int i = 0; i < 50000 && run.running(); ++i) {
      if (has(read_file(work_ + "." + out), "\"phase\":\"" + phase + "\"")) return true;
      std::this_thread::sleep_for(100us);
    }
    return false;
  }
  std::string work_;
};

TEST_F(ConcurrentRunsTest, SecondRunOnTheSameHashfileFailsAtOnce) {
  const auto before = state("t");
  const std::string hashfile = work_ + ".hash";
  run_command("sync && echo 3 > /proc/sys/vm/drop_caches");
  auto first = start({"-dr", "--io-threads", "1", "--progress=json", "--hashfile=" + hashfile,
                      path("t")},
                     "first");
  ASSERT_TRUE(wait_for_phase(*first, "first", "fingerprint")) << first->output();
  const auto t = Clock::now();
  const auto second =
      btrdedupe("-dr --hashfile=" + shell_quote(hashfile) + " " + shell_quote(path("t")));
  const double seconds = std::chrono::duration<double>(Clock::now() - t).count();
  injected();
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_TRUE(has(second.output, "hashfile " + hashfile + " is in use by another btrdedupe run"))
      << second.output;
  EXPECT_EQ(net_change(second.output), 0) << second.output;
  EXPECT_LT(seconds, 2.0);
  // (The "in use" refusal itself proves the first run held the hashfile at that moment.)
  EXPECT_EQ(first->wait(), 0) << first->output();
  expect_unchanged(before, "t");
  // The hashfile is the first run's, complete: the next run finds nothing changed.
  const auto third =
      btrdedupe("-dr --hashfile=" + shell_quote(hashfile) + " " + shell_quote(path("t")));
  EXPECT_EQ(third.exit_code, 0) << third.output;
  EXPECT_EQ(net_change(third.output), 0) << third.output;
}

TEST_F(ConcurrentRunsTest, TwoRunsOnOneFilesystemWithTwoHashfilesBothFinishSafely) {
  const auto before = state("t");
  run_command("sync && echo 3 > /proc/sys/vm/drop_caches");
  auto a = start({"-dr", "--io-threads", "1", "--progress=json", "--hashfile=" + work_ + ".hash-a",
                  path("t")},
                 "a");
  ASSERT_TRUE(wait_for_phase(*a, "a", "scan")) << a->output();
  auto b = start({"-dr", "--io-threads", "2", "--hashfile=" + work_ + ".hash-b", path("t")}, "b");
  const bool overlapped = a->running();  // b started while a was in its scan or later
  const int rb = b->wait();
  const int ra = a->wait();
  injected();
  // Each run's dedupe of ranges the other already shared is a no-op for the kernel (SAME).
  EXPECT_TRUE(ra == 0 || ra == 3) << a->output();
  EXPECT_TRUE(rb == 0 || rb == 3) << b->output();
  EXPECT_TRUE(overlapped) << "run a ended before run b started: no overlap";
  expect_unchanged(before, "t");
  // Together they did all of it: 2 of 3 copies of each group share the first's extent.
  const auto again = btrdedupe("-dr " + shell_quote(path("t")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(net_change(again.output), 0) << again.output;
  EXPECT_EQ(sh("btrfs filesystem du -s --raw " + shell_quote(path("t")) +
               " | awk 'NR==2{print $2}'"),
            "0\n");  // nothing exclusive: every copy shares
}

}  // namespace
}  // namespace btrdedupe::test
