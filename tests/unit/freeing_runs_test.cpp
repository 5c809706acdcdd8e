// Short runs where they free space (issue #39): a destination extent the plan leaves for a
// few sectors is completed from kept data, and only when that lets it go.
#include "src/plan/freeing_runs.h"

#include <gtest/gtest.h>

#include "src/plan/chained_sources.h"
#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

std::vector<uint32_t> join(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Planned {
  MatchResult matches;
  DedupePlan plan;
  std::vector<PhysicalExtent> extents;
  FreeingRuns runs;
};

// Plans fs with the matcher's default -b (128 KiB, 32 sectors), then adds freeing runs.
Planned plan_with_freeing_runs(SyntheticFs& fs) {
  sort_by_physical_identity(fs.scan.extents);
  Planned p;
  p.matches = fs.match(32 * kSector);
  p.plan = plan_rounds(fs.scan, p.matches, {});
  p.extents = destination_extents(fs.scan, p.plan);
  p.runs = add_freeing_runs(fs.scan, fs.fp, p.extents, {}, false, p.matches, p.plan);
  p.extents = destination_extents(fs.scan, p.plan);
  return p;
}

bool has_round(const DedupePlan& plan, RangeRef src, RangeRef dst, uint64_t length) {
  for (const auto& r : plan.rounds)
    if (r.source.file == src.file && r.source.offset == src.offset && r.length == length)
      for (const auto& d : r.destinations)
        if (d.file == dst.file && d.offset == dst.offset) return true;
  return false;
}

// f1 = f0's first 32 sectors (a run the matcher finds), then 12 sectors f0 holds further
// on (too short for it, and more than a quarter of the extent: too much to rewrite): the
// 12 are shared from f0 and f1's one extent goes whole.
TEST(FreeingRuns, AShortRemainderFoundInKeptDataLetsTheExtentGo) {
  SyntheticFs fs;
  fs.add_file(64 * kSector, seq(1, 64));
  fs.add_file(44 * kSector, join(seq(1, 32), seq(41, 12)));
  const auto p = plan_with_freeing_runs(fs);
  EXPECT_EQ(p.runs.groups, 1u);
  EXPECT_EQ(p.runs.extents, 1u);
  EXPECT_TRUE(has_round(p.plan, {0, 40 * kSector}, {1, 32 * kSector}, 12 * kSector));
  ASSERT_EQ(p.extents.size(), 1u);
  EXPECT_TRUE(p.extents[0].freed_by_plan);
  EXPECT_EQ(p.matches.partial_groups, 2u);  // the long run's group and the short one's
}

// A remainder the rewrite takes anyway (3 of 35 sectors) is left to it: one new extent
// for the remainder, where short runs would cut one per run.
TEST(FreeingRuns, ARemainderTheRewriteTakesIsLeftToIt) {
  SyntheticFs fs;
  fs.add_file(64 * kSector, seq(1, 64));
  fs.add_file(35 * kSector, join(seq(1, 32), seq(41, 3)));
  const auto p = plan_with_freeing_runs(fs);
  EXPECT_EQ(p.runs.groups, 0u);
  ASSERT_EQ(p.extents.size(), 1u);
  EXPECT_FALSE(p.extents[0].freed_by_plan);
}

// 3 sectors f0 holds, but 20 more that nothing else holds: the extent stays whatever is
// shared, so no short run cuts it.
TEST(FreeingRuns, AShortRunThatFreesNothingIsNotProposed) {
  SyntheticFs fs;
  fs.add_file(64 * kSector, seq(1, 64));
  fs.add_file(55 * kSector, join(join(seq(1, 32), seq(41, 3)), seq(900, 20)));
  const auto p = plan_with_freeing_runs(fs);
  EXPECT_EQ(p.runs.groups, 0u);
  EXPECT_EQ(p.plan.rounds.size(), 1u);
  ASSERT_EQ(p.extents.size(), 1u);
  EXPECT_FALSE(p.extents[0].freed_by_plan);
}

// Distinct heads, the same 3-sector tail ending past a sector boundary at EOF, each in an
// extent of its own (the peers' test_unaligned_shared_tail): the later tail is shared with
// the earlier, partial last sector included, as the kernel allows at EOF of both.
TEST(FreeingRuns, AnEqualUnalignedTailAtEofIsShared) {
  SyntheticFs fs;
  const uint64_t size = 11 * kSector - 100;
  fs.add_file(size, join(seq(1, 8), seq(90, 3)), {8, 3});
  fs.add_file(size, join(seq(11, 8), seq(90, 3)), {8, 3});
  const auto p = plan_with_freeing_runs(fs);
  EXPECT_EQ(p.runs.groups, 1u);
  EXPECT_TRUE(has_round(p.plan, {0, 8 * kSector}, {1, 8 * kSector}, 3 * kSector - 100));
  ASSERT_EQ(p.extents.size(), 1u);  // f1's tail extent
  EXPECT_TRUE(p.extents[0].freed_by_plan);
}

// A tail that ends at EOF in one file only is not shared: the kernel would refuse it.
TEST(FreeingRuns, ATailIsNotSharedWithBytesThatGoOn) {
  SyntheticFs fs;
  fs.add_file(11 * kSector - 100, join(seq(1, 8), seq(90, 3)), {8, 3});
  fs.add_file(12 * kSector, join(seq(11, 8), seq(90, 4)), {8, 4});
  const auto p = plan_with_freeing_runs(fs);
  for (const auto& r : p.plan.rounds) EXPECT_EQ(r.length % kSector, 0u);
}

// f1's last sectors are the source of f2's short round (planned by hand) and are also in
// f0: they become a destination, f2's round reads from f0, and f1's extent goes.
TEST(FreeingRuns, ARemainderThatWasASourceIsTakenFromKeptData) {
  SyntheticFs fs;
  fs.add_file(64 * kSector, seq(1, 64));
  fs.add_file(44 * kSector, join(seq(1, 32), seq(41, 12)));
  fs.add_file(44 * kSector, join(seq(500, 32), seq(41, 12)));
  sort_by_physical_identity(fs.scan.extents);
  MatchResult matches;
  DedupePlan plan;
  DedupeRound a, b;
  a.source = {0, 0}, a.length = 32 * kSector, a.destinations = {{1, 0}};
  b.source = {1, 32 * kSector}, b.length = 12 * kSector, b.destinations = {{2, 32 * kSector}};
  plan.rounds = {a, b};
  auto extents = destination_extents(fs.scan, plan);
  ASSERT_EQ(extents.size(), 2u);
  EXPECT_TRUE(extents[0].source);  // f1's: a round reads from it
  const auto runs = add_freeing_runs(fs.scan, fs.fp, extents, {}, false, matches, plan);
  EXPECT_EQ(runs.groups, 1u);
  EXPECT_TRUE(has_round(plan, {0, 40 * kSector}, {1, 32 * kSector}, 12 * kSector));
  EXPECT_TRUE(has_round(plan, {0, 40 * kSector}, {2, 32 * kSector}, 12 * kSector));
  extents = destination_extents(fs.scan, plan);
  EXPECT_TRUE(extents[0].freed_by_plan);
  EXPECT_FALSE(extents[0].source);
}

}  // namespace
}  // namespace btrdedupe
