// The rule for rewriting small remainders (src/plan/remainder_plan.h) on synthetic scans: which
// destination extents it plans, which it leaves, and the write budget.
#include "src/plan/remainder_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "src/plan/destination_ranges.h"
#include "src/plan/freed_space.h"
#include "tests/unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class RemainderPlanTest : public ::testing::Test {
 protected:
  // A file of `mib` MiB in one extent (its content does not matter here).
  uint32_t file(uint64_t bytes) {
    return s.add_file(bytes, seq(next_++ * 100000, (bytes + kSector - 1) / kSector));
  }
  void round(uint32_t src, uint32_t dst, uint64_t length, uint64_t offset = 0) {
    DedupeRound r;
    r.source = {src, offset};
    r.length = length;
    r.destinations = {{dst, offset}};
    plan.planned_bytes += length;
    plan.rounds.push_back(r);
  }
  RemainderPlan remainders(RemainderRules rules = {}) {
    extents = destination_extents(s.scan, plan);
    return plan_remainders(s.scan, plan, extents, rules);
  }
  const FileExtent& extent_of(uint32_t f) const {
    for (const auto& e : s.scan.extents)
      if (e.file == f) return e;
    return s.scan.extents.front();
  }

  SyntheticFs s;
  DedupePlan plan;
  std::vector<PhysicalExtent> extents;
  uint32_t next_ = 1;
};

TEST(DestinationRanges, UncoveredIsWhatTheIntervalsLeave) {
  const std::vector<Interval> v{{10, 20}, {30, 40}};
  const auto parts = uncovered(v, 0, 50);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].start, 0u);
  EXPECT_EQ(parts[0].end, 10u);
  EXPECT_EQ(parts[1].start, 20u);
  EXPECT_EQ(parts[1].end, 30u);
  EXPECT_EQ(parts[2].start, 40u);
  EXPECT_EQ(parts[2].end, 50u);
  EXPECT_TRUE(uncovered(v, 12, 18).empty());
  const auto tail = uncovered(v, 15, 35);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].start, 20u);
  EXPECT_EQ(tail[0].end, 30u);
}

// 3.5 MiB of a 4 MiB extent deduped, its last 512 KiB unique: the tail is rewritten, and
// the extent is predicted freed less what the rewrite writes.
TEST_F(RemainderPlanTest, SmallUniqueTailIsPlanned) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB);
  round(a, b, 3 * kMiB + kMiB / 2);
  const auto p = remainders();
  ASSERT_EQ(p.extents.size(), 1u);
  EXPECT_EQ(p.extents[0].bytenr, extent_of(b).disk_bytenr);
  ASSERT_EQ(p.extents[0].ranges.size(), 1u);
  EXPECT_EQ(p.extents[0].ranges[0].file, b);
  EXPECT_EQ(p.extents[0].ranges[0].offset, 3 * kMiB + kMiB / 2);
  EXPECT_EQ(p.extents[0].ranges[0].length, kMiB / 2);
  EXPECT_EQ(p.bytes, kMiB / 2);
  EXPECT_EQ(predicted_freed(extents).bytes, 4 * kMiB - kMiB / 2);
}

// The same tail is also the source of a round into a third file: rewritten before the
// rounds (so that the round shares the copy), and checked against every reference then.
TEST_F(RemainderPlanTest, ATailARoundReadsFromIsRewrittenBeforeTheRounds) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB), c = file(4 * kMiB);
  round(a, b, 3 * kMiB + kMiB / 2);
  round(b, c, kMiB / 2, 3 * kMiB + kMiB / 2);
  const auto p = remainders();
  const auto it = std::find_if(p.extents.begin(), p.extents.end(), [&](const RemainderExtent& e) {
    return e.bytenr == extent_of(b).disk_bytenr;
  });
  ASSERT_NE(it, p.extents.end());
  EXPECT_TRUE(it->before_rounds);
  ASSERT_EQ(it->references.size(), 1u);  // b's one extent item
  EXPECT_EQ(it->references[0].file, b);
  EXPECT_EQ(it->ranges[0].offset, 3 * kMiB + kMiB / 2);
}

// A remainder of more than a quarter of the extent, or over the cap, is left.
TEST_F(RemainderPlanTest, LargeRemaindersAreLeft) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB);
  round(a, b, 2 * kMiB + kMiB / 2);  // 1.5 MiB left: more than a quarter
  EXPECT_TRUE(remainders().extents.empty());
  EXPECT_EQ(predicted_freed(extents).bytes, 0u);

  DedupePlan small_tail;
  plan = small_tail;
  round(a, b, 3 * kMiB + kMiB / 2);
  RemainderRules capped;
  capped.max_remainder_bytes = kMiB / 4;
  EXPECT_TRUE(remainders(capped).extents.empty());
}

// The remainder in the middle of the extent, and at an unaligned EOF.
TEST_F(RemainderPlanTest, MiddleAndEofRemainders) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB - 100);
  round(a, b, 2 * kMiB);
  round(a, b, 2 * kMiB - kMiB / 2, 2 * kMiB + kMiB / 4);  // leaves [2M, 2.25M) and the tail
  const auto p = remainders();
  ASSERT_EQ(p.extents.size(), 1u);
  ASSERT_EQ(p.extents[0].ranges.size(), 2u);
  EXPECT_EQ(p.extents[0].ranges[0].offset, 2 * kMiB);
  EXPECT_EQ(p.extents[0].ranges[0].length, kMiB / 4);
  EXPECT_EQ(p.extents[0].ranges[1].offset, 3 * kMiB + kMiB / 4 + kMiB / 2);
  EXPECT_EQ(p.extents[0].ranges[1].length, kMiB / 4 - 100);  // to EOF
}

// A file the plan does not touch that references part of the extent (a partial clone) is
// part of the remainder: its whole reference is rewritten too.
TEST_F(RemainderPlanTest, OtherFilesReferencesAreRemainderToo) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB), g = file(0);
  FileExtent clone = extent_of(b);
  clone.file = g;
  clone.length = kMiB / 4;  // B's first 256 KiB
  s.scan.files[g].size = kMiB / 4;
  s.scan.extents.push_back(clone);
  sort_by_physical_identity(s.scan.extents);
  round(a, b, 3 * kMiB + kMiB / 2);
  const auto p = remainders();
  ASSERT_EQ(p.extents.size(), 1u);
  ASSERT_EQ(p.extents[0].ranges.size(), 2u);
  EXPECT_EQ(p.extents[0].ranges[0].file, b);
  EXPECT_EQ(p.extents[0].ranges[1].file, g);
  EXPECT_EQ(p.extents[0].ranges[1].offset, 0u);
  EXPECT_EQ(p.extents[0].ranges[1].length, kMiB / 4);
  EXPECT_EQ(p.bytes, kMiB / 2 + kMiB / 4);
}

// Two references to the same remainder bytes: rewriting both would write them twice and
// unshare them. Left.
TEST_F(RemainderPlanTest, SharedRemainderIsLeft) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB), g = file(0);
  FileExtent clone = extent_of(b);
  clone.file = g;
  clone.extent_offset = 3 * kMiB + kMiB / 2;  // B's unique tail, reflinked
  clone.length = kMiB / 2;
  s.scan.files[g].size = kMiB / 2;
  s.scan.extents.push_back(clone);
  sort_by_physical_identity(s.scan.extents);
  round(a, b, 3 * kMiB + kMiB / 2);
  EXPECT_TRUE(remainders().extents.empty());
}

// References in read-only subvolumes, or standing for folded snapshot copies, are never
// written: their extents are left.
TEST_F(RemainderPlanTest, ReadOnlyHoldersAreLeft) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB);
  round(a, b, 3 * kMiB + kMiB / 2);
  s.scan.files[b].readonly_alias = true;
  EXPECT_TRUE(remainders().extents.empty());
  s.scan.files[b].readonly_alias = false;
  const auto r = s.add_file(4 * kMiB, {}, {}, static_cast<int>(b));  // a reflink of b
  s.in_subvolume(r, 300, true);
  sort_by_physical_identity(s.scan.extents);
  EXPECT_TRUE(remainders().extents.empty());
}

// An extent the plan frees anyway needs no rewrite.
TEST_F(RemainderPlanTest, FreedExtentsAreNotRewritten) {
  const auto a = file(4 * kMiB), b = file(4 * kMiB);
  round(a, b, 4 * kMiB);
  EXPECT_TRUE(remainders().extents.empty());
  EXPECT_EQ(predicted_freed(extents).bytes, 4 * kMiB);
}

// Within the budget, the extents that free the most per byte written come first; the
// others are counted.
TEST_F(RemainderPlanTest, BudgetTakesTheBestFirstAndCountsTheRest) {
  const auto a = file(4 * kMiB), b1 = file(4 * kMiB), b2 = file(4 * kMiB);
  round(a, b1, 3 * kMiB + kMiB / 2);               // 512 KiB left
  round(a, b2, 3 * kMiB + 3 * kMiB / 4);           // 256 KiB left
  RemainderRules rules;
  rules.budget_bytes = 600 * 1024;
  const auto p = remainders(rules);
  ASSERT_EQ(p.extents.size(), 1u);
  EXPECT_EQ(p.extents[0].ranges[0].file, b2);
  EXPECT_EQ(p.bytes, kMiB / 4);
  EXPECT_EQ(p.skipped_for_budget, 1u);
  EXPECT_EQ(p.bytes_skipped_for_budget, kMiB / 2);
  EXPECT_EQ(predicted_freed(extents).bytes, 4 * kMiB - kMiB / 4);
}

}  // namespace
}  // namespace btrdedupe
