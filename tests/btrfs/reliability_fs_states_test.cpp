// Filesystem states a run meets: a full filesystem, a read-only mount, a send in progress,
// an active swapfile, immutable and append-only files, NoCOW files, zstd compression and
// every checksum algorithm. Each test checks the data-safety invariant.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "support/planned_dedupe.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/plan/dedupe_plan.h"
#include "src/match/duplicate_match.h"
#include "src/fingerprint/fingerprint.h"
#include "tests/btrfs/reliability_support.h"

namespace btrdedupe::test {
namespace {

using namespace std::chrono_literals;

PlanOptions readonly_destinations_too() {
  PlanOptions o;
  o.dedupe_readonly = true;
  return o;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

std::string all_messages(const DedupeStats& s) {
  std::string out;
  for (const auto& m : s.messages) out += m + "\n";
  return out;
}


// --- A full filesystem -------------------------------------------------------------------

class FullFilesystemTest : public ReliabilityTest {
 protected:
  // Mixed block groups: data and metadata share the space, so filling it with data leaves
  // no room for the extent references a dedupe must write.
  ImageOptions image_options() const override {
    ImageOptions o;
    o.size_bytes = 128ULL << 20;
    o.mkfs_args = {"--mixed"};
    return o;
  }
  void SetUp() override {
    ReliabilityTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    sh("cd " + shell_quote(path("")) +
       " && mkdir d && for i in $(seq 1 300); do head -c 16384 /dev/urandom > d/f$i"
       " && cp --reflink=never d/f$i d/g$i; done && sync");
  }
  void fill() {
    const auto r = run_command("head -c 256M /dev/zero > " + shell_quote(path("fill")) + "; sync");
    ASSERT_TRUE(has(r.output, "No space left on device")) << r.output;
    injected();
  }
};

TEST_F(FullFilesystemTest, FirstEnospcStopsTheDedupeAndNothingChanges) {
  auto p = plan_dedupe(path("d"));
  ASSERT_EQ(p.plan.rounds.size(), 300u);
  fill();
  const auto before = state("d");
  DedupeOptions o;
  o.io_threads = 2;
  const auto stats = run_dedupe(p.scan, p.plan, o);
  EXPECT_TRUE(stats.no_space);
  EXPECT_GE(stats.errors_by_code.count(ENOSPC), 1u);
  // Only the rounds already under way when the first ENOSPC came back were refused.
  EXPECT_LE(stats.ranges_failed, 2u);
  EXPECT_EQ(stats.ranges_failed + stats.ranges_same + stats.ranges_not_tried, 300u);
  EXPECT_GE(stats.ranges_not_tried, 290u);
  ASSERT_FALSE(stats.messages.empty());
  EXPECT_TRUE(has(stats.messages[0], "the filesystem is full (ENOSPC)")) << all_messages(stats);
  expect_unchanged(before, "d");
}

TEST_F(FullFilesystemTest, TheBinarySaysTheFilesystemIsFullAndExitsOne) {
  fill();
  const auto before = state("d");
  const auto r = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "the filesystem is full (ENOSPC)")) << r.output;
  expect_unchanged(before, "d");
}

// --- Read-only mount, send, swapfile, attributes -------------------------------------------

class FsStatesTest : public ReliabilityTest {};

TEST_F(FsStatesTest, ReadOnlyRemountBetweenScanAndDedupeIsEroFsPerRange) {
  sh("cd " + shell_quote(path("")) +
     " && for i in 1 2 3; do head -c 1048576 /dev/urandom > a$i && cp --reflink=never a$i b$i;"
     " done && sync");
  auto p = plan_dedupe(path(""));
  ASSERT_EQ(p.plan.rounds.size(), 3u);
  sh("mount -o remount,ro " + shell_quote(path("")));
  injected();
  const auto before = state();
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_failed, 3u);  // every round was tried: the run went on
  EXPECT_EQ(stats.errors_by_code.count(EROFS) ? stats.errors_by_code.at(EROFS) : 0, 3u);
  EXPECT_EQ(stats.bytes_deduped, 0u);
  EXPECT_TRUE(has(all_messages(stats), "read-only filesystem")) << all_messages(stats);
  expect_unchanged(before);
  // The binary on the read-only mount: exit 3 (left as they were), each range named.
  const auto r = btrdedupe("-dr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "read-only filesystem (Read-only file system)")) << r.output;
  expect_unchanged(before);
  sh("mount -o remount,rw " + shell_quote(path("")));
}

// FIDEDUPERANGE is EAGAIN while a send uses the destination's subvolume. The send here is
// held open by a reader that waits before draining the stream.
TEST_F(FsStatesTest, SendInProgressIsRetriedThenReportedAndTheRunGoesOn) {
  // data/x is referenced twice (its reflink copy), so it is the source; snap/y, the only
  // reference to its extent, is the destination inside the read-only snapshot being sent.
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create data && btrfs -q subvolume create vol"
     " && head -c 4194304 /dev/urandom > data/x && cp --reflink=always data/x data/x-ref"
     " && cp --reflink=never data/x vol/y && btrfs -q subvolume snapshot -r vol snap"
     " && btrfs -q subvolume delete vol"
     " && head -c 1048576 /dev/urandom > data/z1 && cp --reflink=never data/z1 data/z2 && sync");
  const auto before = state();
  auto send_for = [&](int seconds) {
    return std::make_unique<Child>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "btrfs send -q " + shell_quote(path("snap")) + " | (sleep " +
                                     std::to_string(seconds) + "; cat > /dev/null)"},
        fs().image_file() + ".send");
  };
  {
    auto p = plan_dedupe(path(""), readonly_destinations_too());
    ASSERT_EQ(p.plan.rounds.size(), 2u);
    auto send = send_for(4);
    std::this_thread::sleep_for(500ms);
    ASSERT_TRUE(send->running()) << send->output();
    injected();
    DedupeOptions o;
    o.eagain_retries = 2;
    o.eagain_wait_ms = 300;
    const auto stats = run_dedupe(p.scan, p.plan, o);
    EXPECT_EQ(stats.ranges_retried, 2u);  // tried three times in all, then reported
    EXPECT_EQ(stats.ranges_failed, 1u);
    EXPECT_EQ(stats.errors_by_code.count(EAGAIN) ? stats.errors_by_code.at(EAGAIN) : 0, 1u);
    EXPECT_EQ(stats.ranges_same, 1u);  // data/z2: the run went on
    EXPECT_TRUE(has(all_messages(stats), "snap/y: a send is running on its subvolume"))
        << all_messages(stats);
    EXPECT_TRUE(send->running()) << "the send ended before the last retry";
    EXPECT_EQ(send->wait(), 0) << send->output();
  }
  {
    // The send ends after about 1 s: the retry 1.4 s in succeeds.
    auto p = plan_dedupe(path(""), readonly_destinations_too());
    ASSERT_EQ(p.plan.rounds.size(), 1u);
    auto send = send_for(1);
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE(send->running()) << send->output();
    injected();
    DedupeOptions o;
    o.eagain_retries = 3;
    o.eagain_wait_ms = 700;
    const auto stats = run_dedupe(p.scan, p.plan, o);
    EXPECT_GE(stats.ranges_retried, 1u);
    EXPECT_EQ(stats.ranges_failed, 0u);
    EXPECT_EQ(stats.ranges_same, 1u);
    EXPECT_EQ(stats.bytes_deduped, 4194304u);
    EXPECT_EQ(send->wait(), 0) << send->output();
  }
  expect_unchanged(before);
}

// The same through the binary (--dedupe-readonly makes the snapshot's file a destination):
// three retries a second apart, then reported; the run goes on and exits 3.
TEST_F(FsStatesTest, SendInProgressThroughTheBinaryIsReportedAndTheRunGoesOn) {
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create data && btrfs -q subvolume create vol"
     " && head -c 4194304 /dev/urandom > data/x && cp --reflink=always data/x data/x-ref"
     " && cp --reflink=never data/x vol/y && btrfs -q subvolume snapshot -r vol snap"
     " && btrfs -q subvolume delete vol"
     " && head -c 1048576 /dev/urandom > data/z1 && cp --reflink=never data/z1 data/z2 && sync");
  const auto before = state();
  Child send({"/bin/sh", "-c",
              "btrfs send -q " + shell_quote(path("snap")) + " | (sleep 8; cat > /dev/null)"},
             fs().image_file() + ".send");
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(send.running()) << send.output();
  injected();
  const auto r = btrdedupe("-dr --dedupe-readonly " + shell_quote(path("")));
  EXPECT_TRUE(send.running()) << "the send ended before the last retry";
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "snap/y: a send is running on its subvolume")) << r.output;
  EXPECT_EQ(net_change(r.output), 2 * 1048576) << r.output;  // data/z2 joined data/z1
  EXPECT_EQ(send.wait(), 0) << send.output();
  expect_unchanged(before);
}

// swapon's refusal is the only reason to skip: a sandbox may not allow it.
TEST_F(FsStatesTest, ActiveSwapfileIsTxtBsyAndTheRunGoesOn) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir nc && chattr +C nc && touch nc/swap && chmod 600 nc/swap"
     " && head -c 16777216 /dev/urandom > nc/swap && mkswap nc/swap > /dev/null"
     " && cp --reflink=never nc/swap nc/twin && cp --reflink=always nc/twin nc/twin-ref"
     " && head -c 1048576 /dev/urandom > z1 && cp --reflink=never z1 z2 && sync");
  const std::string swap = path("nc/swap");
  const auto on = run_command("swapon " + shell_quote(swap));
  if (on.exit_code != 0)
    GTEST_SKIP() << "swapon is refused here, so the swapfile case cannot run: " << on.output;
  struct SwapOff {
    std::string file;
    ~SwapOff() { run_command("swapoff " + shell_quote(file)); }
  } swap_off{swap};
  injected();
  // The kernel may page to an active swapfile: its bytes are not ours to check until swapoff.
  auto not_swap = [](const std::string& rel) { return rel == "nc/swap"; };
  const auto before = state("", not_swap);
  const auto r = btrdedupe("-dr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "nc/swap: active swapfile (Text file busy)")) << r.output;
  EXPECT_EQ(net_change(r.output), 2 * 1048576) << r.output;  // z2 still joined z1
  expect_unchanged(before, "", not_swap);
}

TEST_F(FsStatesTest, ImmutableIsEpermAppendOnlyIsDedupedAndTheRunGoesOn) {
  // a is referenced twice, so imm and app are destinations; s (immutable) is a source.
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom > a && cp --reflink=always a a-ref"
     " && cp --reflink=never a imm && cp --reflink=never a app"
     " && head -c 1048576 /dev/urandom > s && cp --reflink=always s s-ref"
     " && cp --reflink=never s t && sync && chattr +i imm s s-ref && chattr +a app");
  injected(2);
  const auto before = state();
  const auto r = btrdedupe("-dr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "/imm: not permitted")) << r.output;
  // The kernel dedupes into an append-only file (its bytes stay as they are), and reads an
  // immutable source: 2 MiB shared, imm left alone.
  EXPECT_EQ(net_change(r.output), 2097152) << r.output;
  expect_unchanged(before);
  EXPECT_EQ(sh("lsattr -d " + shell_quote(path("imm")) + " | cut -c1-6"), "----i-\n");
  EXPECT_EQ(sh("lsattr -d " + shell_quote(path("app")) + " | cut -c1-6"), "-----a\n");
  sh("chattr -i " + shell_quote(path("imm")) + " " + shell_quote(path("s")) + " " +
     shell_quote(path("s-ref")) + " && chattr -a " + shell_quote(path("app")));
}

TEST_F(FsStatesTest, NocowFilesThroughTheBinary) {
  build_layout("nodatacow", "n");
  const auto before = state();
  const auto r = btrdedupe("-dr " + shell_quote(path("n")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 16 << 20) << r.output;  // nocow with nocow, cow with cow
  expect_unchanged(before);
}

class ZstdMountTest : public ReliabilityTest {
 protected:
  ImageOptions image_options() const override {
    ImageOptions o;
    o.mount_options = "compress=zstd";
    return o;
  }
};

TEST_F(ZstdMountTest, CompressedAndPlainCopiesDedupeThroughTheBinary) {
  build_layout("compressed", "c");
  // Written under compress=zstd: text compresses, random data stays plain.
  sh("cd " + shell_quote(path("")) +
     " && head -c 3000000 /dev/urandom | base64 > t1 && cp --reflink=never t1 t2"
     " && head -c 2000000 /dev/urandom > r1 && cp --reflink=never r1 r2 && sync");
  const auto before = state();
  const auto r = btrdedupe("-dr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(net_change(r.output), 0) << r.output;
  expect_unchanged(before);
  const auto again = btrdedupe("-dr " + shell_quote(path("")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(net_change(again.output), 0) << again.output;  // nothing left to do
}

class CsumTypeTest : public ReliabilityTest, public ::testing::WithParamInterface<const char*> {
 protected:
  ImageOptions image_options() const override {
    ImageOptions o;
    o.mkfs_args = {"--csum", GetParam()};
    return o;
  }
};

TEST_P(CsumTypeTest, TwoCopiesEndToEndThroughTheBinary) {
  build_layout("two-copies", "tc");
  const auto before = state();
  const auto r = btrdedupe("-dr " + shell_quote(path("tc")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // All of b/ and the in-tree duplicates of a/ (fixtures/README.md), block-rounded.
  EXPECT_GE(net_change(r.output), 19476456) << r.output;
  expect_unchanged(before);
  const auto again = btrdedupe("-dr " + shell_quote(path("tc")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(net_change(again.output), 0) << again.output;
}

INSTANTIATE_TEST_SUITE_P(EveryCsum, CsumTypeTest,
                         ::testing::Values("crc32c", "xxhash", "sha256", "blake2"),
                         [](const auto& p) { return std::string(p.param); });

}  // namespace
}  // namespace btrdedupe::test
