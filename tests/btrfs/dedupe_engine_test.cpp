// The dedupe phase end to end on real btrfs, including files that change under it.
// Every test checks the safety invariant: no file's bytes or mtime change.
#include "src/dedupe/dedupe_engine.h"

#include <gtest/gtest.h>

#include "src/plan/dedupe_plan.h"
#include "src/match/duplicate_match.h"
#include "src/fingerprint/fingerprint.h"
#include "support/btrfs_image.h"
#include "support/planned_dedupe.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

class DedupeEngineTest : public BtrfsTest {
 protected:
  // sha256 and mtime (ns) of every file under rel, one line each.
  std::string content_state(const std::string& rel) {
    return sh("cd " + shell_quote(path(rel)) +
              " && find . -type f -printf '%p %T@\\n' | sort"
              " && find . -type f -print0 | sort -z | xargs -0 -r sha256sum");
  }

  PlannedDedupe plan(const std::string& rel, const PlanOptions& po = {}) {
    return plan_dedupe(path(rel), po);
  }

  SharingSummary sharing(const std::string& rel) {
    auto scan = scan_tree(path(rel), {});
    EXPECT_TRUE(scan.ok());
    return scan.ok() ? summarize_sharing(scan->extents) : SharingSummary{};
  }

  // `btrfs filesystem du -s --raw` exclusive bytes of one path.
  uint64_t exclusive_bytes(const std::string& rel) {
    const auto out =
        sh("btrfs filesystem du -s --raw " + shell_quote(path(rel)) + " | awk 'NR==2{print $2}'");
    return std::stoull(out);
  }
};

TEST_F(DedupeEngineTest, TwoCopiesBecomeFullyShared) {
  build_layout("two-copies", "tc");
  const auto before = content_state("tc");
  auto p = plan("tc");
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_failed, 0u);
  EXPECT_EQ(stats.ranges_differ, 0u);
  EXPECT_EQ(stats.bytes_deduped, p.plan.planned_bytes);
  EXPECT_EQ(content_state("tc"), before);
  // b/ shares everything with a/: nothing of it is exclusive any more, and a/'s in-tree
  // duplicates (1,315,840 bytes, see fixtures/README.md) share too.
  const auto a = sharing("tc/a");
  EXPECT_EQ(sharing("tc").unique_bytes, a.unique_bytes);
  EXPECT_EQ(exclusive_bytes("tc/b"), 0u);
  EXPECT_GE(a.shared_bytes, 1315840u);
  // A second pass finds nothing to do and makes no call.
  auto again = plan("tc");
  EXPECT_TRUE(again.matches.groups.empty());
  EXPECT_TRUE(again.plan.rounds.empty());
  EXPECT_EQ(run_dedupe(again.scan, again.plan, {}).calls, 0u);
}

TEST_F(DedupeEngineTest, FileModifiedAfterTheScanIsSkippedAndIntact) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom > a && cp --reflink=never a b && cp --reflink=never a c"
     " && cp --reflink=always a a.ref && sync");
  // a's layout, referenced twice, is the source whatever extents writeback gave each copy
  // (the least fragmented would win otherwise: under load, sometimes b).
  auto p = plan("");
  ASSERT_EQ(p.plan.rounds.size(), 1u);
  // b changes after the scan (new mtime, same size): never deduped on stale sums.
  sh("cd " + shell_quote(path("")) +
     " && printf 'X' | dd of=b bs=1 seek=5000 conv=notrunc status=none && sync");
  const auto before = content_state("");
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_changed, 1u);
  EXPECT_EQ(stats.ranges_same, 1u);  // c still joins a
  EXPECT_EQ(content_state(""), before);
  ASSERT_FALSE(stats.messages.empty());
  EXPECT_NE(stats.messages[0].find("changed since the scan"), std::string::npos) << stats.messages[0];
}

TEST_F(DedupeEngineTest, ContentChangedWithoutMtimeIsCaughtByTheKernelCompare) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom > a && cp --reflink=never a b && sync");
  auto p = plan("");
  ASSERT_EQ(p.plan.rounds.size(), 1u);
  // Change one byte of b (to its value plus one: a fixed letter would already be there one
  // time in 256), then restore b's mtime: only the byte compare can tell.
  sh("cd " + shell_quote(path("")) +
     " && m=$(stat -c %y b)"
     " && v=$(dd if=b bs=1 skip=7 count=1 status=none | od -An -tu1 | tr -d ' ')"
     " && printf \"\\\\$(printf %03o $(( (v + 1) % 256 )))\""
     " | dd of=b bs=1 seek=7 conv=notrunc status=none"
     " && touch -d \"$m\" b && sync");
  const auto before = content_state("");
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_differ, 1u);
  EXPECT_EQ(stats.bytes_deduped, 0u);
  EXPECT_EQ(content_state(""), before);
}

TEST_F(DedupeEngineTest, DeletedAndTruncatedFilesAreSkipped) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 2097152 /dev/urandom > a && cp --reflink=never a b && cp --reflink=never a c"
     " && cp --reflink=never a d && cp --reflink=always a a.ref && sync");
  auto p = plan("");  // a's layout is the source: referenced twice
  sh("cd " + shell_quote(path("")) + " && rm b && truncate -s 4096 c && sync");
  const auto before = content_state("");
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_changed, 2u);
  EXPECT_EQ(stats.ranges_same, 1u);
  EXPECT_EQ(stats.ranges_failed, 0u);
  EXPECT_EQ(content_state(""), before);
}

TEST_F(DedupeEngineTest, UnalignedTailIsSharedToEof) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 1049576 /dev/urandom > a && cp --reflink=never a b && sync");
  const auto before = content_state("");
  auto p = plan("");
  ASSERT_EQ(p.plan.rounds.size(), 1u);
  EXPECT_EQ(p.plan.rounds[0].length, 1049576u);
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.bytes_deduped, 1049576u);
  EXPECT_EQ(content_state(""), before);
  EXPECT_EQ(sharing("").unique_bytes, 1052672u);  // one copy, block-rounded
}

TEST_F(DedupeEngineTest, NocowPairsDedupeAndNeverMixWithCow) {
  build_layout("nodatacow", "n");
  const auto before = content_state("n");
  auto p = plan("n");
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_failed, 0u);  // no nocow/cow pair was ever proposed
  EXPECT_EQ(stats.bytes_deduped, 8u << 20);  // a-again with a, on each side
  EXPECT_EQ(content_state("n"), before);
}

TEST_F(DedupeEngineTest, MoreCopiesThanOneCallTakes) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 65536 /dev/urandom > f0 && for i in $(seq 1 130); do"
     " cp --reflink=never f0 f$i; done && sync");
  const auto before = content_state("");
  auto p = plan("");
  ASSERT_EQ(p.plan.rounds.size(), 2u);  // 130 destinations: 127 + 3
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.calls, 2u);
  EXPECT_EQ(stats.ranges_same, 130u);
  EXPECT_EQ(sharing("").unique_bytes, 65536u);
  EXPECT_EQ(content_state(""), before);
}

TEST_F(DedupeEngineTest, OneFileWithItselfAtTwoOffsets) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 262144 /dev/urandom > half && dd if=half of=f bs=64K status=none"
     " && dd if=half of=f bs=64K seek=4 conv=notrunc status=none && rm half && sync");
  const auto before = content_state("");
  auto p = plan("");
  ASSERT_EQ(p.plan.rounds.size(), 1u);
  EXPECT_EQ(p.plan.rounds[0].source.file, p.plan.rounds[0].destinations[0].file);
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.bytes_deduped, 262144u);
  EXPECT_EQ(sharing("").unique_bytes, 262144u);
  EXPECT_EQ(content_state(""), before);
}

TEST_F(DedupeEngineTest, ReadOnlySnapshotsStayUntouched) {
  build_layout("snapshots", "s");
  const auto gen_before = sh("btrfs subvolume show " + shell_quote(path("s/snap-ro")) +
                             " | grep -E 'Generation|Gen at creation'");
  const auto before = content_state("s");
  auto p = plan("s");
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_failed, 0u);
  EXPECT_EQ(stats.bytes_deduped, 3u << 20);  // the added copy of big.bin
  EXPECT_EQ(content_state("s"), before);
  EXPECT_EQ(sh("btrfs subvolume show " + shell_quote(path("s/snap-ro")) +
               " | grep -E 'Generation|Gen at creation'"),
            gen_before);
}

}  // namespace
}  // namespace btrdedupe::test
