// What a follower meets in a live system (issue #41): the filesystem remounted read-only or
// unmounted under it, subvolumes deleted and snapshots made while it runs, a send, a
// balance, a full disk. It stops with a clear line where it must and goes on where it can;
// no file's content or mtime changes either way.
#include <signal.h>

#include <gtest/gtest.h>

#include "tests/btrfs/follow_fixture.h"

namespace btrdedupe::test {
namespace {

constexpr size_t kFile = 1 << 20;

TEST_F(FollowTest, ARemountReadOnlyStopsItWithExitOneAndAClearLine) {
  random_tree("d", 4, kFile);
  auto follower = start();
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  const auto before = state();
  injected();
  sh("mount -o remount,ro " + shell_quote(path("")));
  ASSERT_TRUE(wait_until([&] { return !follower->running(); }, 20)) << follower->output();
  EXPECT_EQ(follower->wait(), 1);
  EXPECT_TRUE(has(follower->output(), "follower stops:")) << follower->output();
  EXPECT_TRUE(has(follower->output(), "read-only")) << follower->output();
  EXPECT_TRUE(has(status().stop_reason, "read-only")) << status().stop_reason;
  sh("mount -o remount,rw " + shell_quote(path("")));
  expect_unchanged(before);
  // The hashfile is clean: a run uses it.
  const auto again = btrdedupe("-dr --hashfile=" + shell_quote(hashfile()) + " " +
                               shell_quote(path("")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST_F(FollowTest, AnUnmountStopsItWithExitOne) {
  random_tree("d", 4, kFile);
  auto follower = start();
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  injected();
  sh("umount -l " + shell_quote(path("")));
  ASSERT_TRUE(wait_until([&] { return !follower->running(); }, 20)) << follower->output();
  EXPECT_EQ(follower->wait(), 1);
  EXPECT_TRUE(has(follower->output(), "follower stops:")) << follower->output();
  EXPECT_TRUE(has(status().stop_reason, "unmounted")) << status().stop_reason;
}

TEST_F(FollowTest, SubvolumesDeletedAndSnapshotsMadeWhileItRuns) {
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume create a && btrfs -q subvolume "
     "create b");
  random_tree("a", 6, kFile);
  // --max-read-rate: a cycle takes seconds, long enough to delete a subvolume inside it.
  auto follower = start({"--max-read-rate=2M"});
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  // A new subvolume with a copy joins; a read-only snapshot of it is a source only.
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume create c && cp -a "
     "--reflink=never a/. c/ && btrfs -q subvolume snapshot -r a snap && sync");
  ASSERT_TRUE(wait_until([&] { return status().state == "cycle"; }, 20)) << follower->output();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  injected();
  sh("btrfs -q subvolume delete " + shell_quote(path("c")));
  ASSERT_TRUE(waiting_after(2)) << follower->output();
  ASSERT_TRUE(follower->running()) << follower->output();
  // More data arrives in another subvolume: the follower goes on.
  arrive("a/f1", "b/f1");
  arrive("a/f6", "b/f6");
  ASSERT_TRUE(wait_until([&] { return shared("b/f1") && shared("b/f6"); }, 40))
      << follower->output();
  ASSERT_TRUE(follower->running()) << follower->output();
  const auto before = state();
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  expect_unchanged(before);
}

TEST_F(FollowTest, ASendInProgressIsRetriedAndDoesNotStopIt) {
  // snap/y is the only other copy of what arrives, and the arrival is referenced twice:
  // freeing an extent means deduping into the snapshot (--dedupe-readonly), which a send
  // of it refuses (EAGAIN).
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume create data && btrfs -q "
     "subvolume create vol && head -c 4194304 /dev/urandom > vol/y && btrfs -q subvolume "
     "snapshot -r vol snap && btrfs -q subvolume delete vol && sync");
  auto follower = start({"--dedupe-readonly"});
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  Child send({"/bin/sh", "-c",
              "btrfs send -q " + shell_quote(path("snap")) + " | (sleep 8; cat > /dev/null)"},
             fs().image_file() + ".send");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(send.running()) << send.output();
  injected();
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never snap/y data/y2 && cp "
     "--reflink=always data/y2 data/y2-ref && head -c 1048576 /dev/urandom > data/z1 && cp "
     "--reflink=never data/z1 data/z2 && sync");
  const auto before = state();
  ASSERT_TRUE(wait_until([&] { return has(follower->output(), "a send is running on its "
                                                              "subvolume"); }, 40))
      << follower->output();
  EXPECT_TRUE(send.running()) << "the send ended before the last retry";
  EXPECT_TRUE(shared("data/z2")) << follower->output();   // the rest of the cycle was done
  EXPECT_TRUE(follower->running()) << follower->output();
  EXPECT_EQ(send.wait(), 0) << send.output();
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  expect_unchanged(before);
}

TEST_F(FollowTest, ABalanceAndAScrubUnderACycleChangeNothing) {
  random_tree("d", 16, kFile);
  auto follower = start({"--max-read-rate=8M"});
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  arrive("d", "d2");
  const auto before = state();
  ASSERT_TRUE(wait_until([&] { return status().state == "cycle"; }, 20)) << follower->output();
  injected(2);
  Child balance({"/bin/sh", "-c", "btrfs balance start --full-balance " + shell_quote(path("")) +
                                      " && btrfs scrub start -B " + shell_quote(path(""))},
                fs().image_file() + ".balance");
  EXPECT_EQ(balance.wait(), 0) << balance.output();
  ASSERT_TRUE(wait_until([&] { return shared("d2/f1") && shared("d2/f16"); }, 60))
      << follower->output();
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  expect_unchanged(before);
  std::string report;
  EXPECT_TRUE(fs().check_unmounted(&report)) << report;
}

class FollowFullDiskTest : public FollowTest {
 protected:
  // Mixed block groups: filled with data, no room is left for a dedupe's references.
  ImageOptions image_options() const override {
    ImageOptions o;
    o.size_bytes = 128ULL << 20;
    o.mkfs_args = {"--mixed"};
    return o;
  }
};

TEST_F(FollowFullDiskTest, AFullDiskLeavesItRunningAndItDedupesOnceThereIsRoom) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir d && for i in $(seq 1 100); do head -c 16384 /dev/urandom > d/f$i; done && sync");
  // --settle=5: the disk is full before the copy's cycle may start.
  auto follower = start({"--settle=5"});
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  const uint64_t cycles = status().cycles;
  arrive("d", "d2");
  const auto r = run_command("head -c 256M /dev/zero > " + shell_quote(path("fill")) + "; sync");
  ASSERT_TRUE(has(r.output, "No space left on device")) << r.output;
  injected();
  const auto before = state("", [](const std::string& p) { return p == "fill"; });
  // The cycle meets ENOSPC; the follower goes on.
  ASSERT_TRUE(wait_until([&] { return has(follower->output(), "(ENOSPC)") &&
                                      status().cycles > cycles && status().state == "waiting"; }))
      << follower->output();
  EXPECT_TRUE(follower->running()) << follower->output();
  EXPECT_TRUE(has(follower->output(), "the filesystem is full (ENOSPC)")) << follower->output();
  EXPECT_FALSE(shared("d2/f100"));
  sh("rm " + shell_quote(path("fill")) + " && sync");
  follower->kill(SIGHUP);
  EXPECT_TRUE(wait_until([&] { return shared("d2/f1") && shared("d2/f100"); }, 40))
      << follower->output();
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  expect_unchanged(before, "", [](const std::string& p) { return p == "fill"; });
}

}  // namespace
}  // namespace btrdedupe::test
