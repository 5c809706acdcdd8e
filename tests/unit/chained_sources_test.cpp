// Sources that are destinations too (issue #39, "plan = disk"): a round must not read from
// a range another round moves, or its destinations keep the extent the plan counts freed.
#include "src/plan/chained_sources.h"

#include <gtest/gtest.h>

#include "src/plan/freed_space.h"
#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

DedupeRound round_of(uint32_t src, uint64_t src_sector, uint64_t sectors,
                     std::vector<RangeRef> dests, uint32_t group = 0) {
  DedupeRound r;
  r.source = {src, src_sector * kSector};
  r.length = sectors * kSector;
  r.destinations = std::move(dests);
  r.group = group;
  return r;
}

RangeRef at(uint32_t file, uint64_t sector) { return {file, sector * kSector}; }

// The round with this source (file and sector), or nullptr; the plan's order is the
// caller's business (it sorts the rounds after).
const DedupeRound* with_source(const DedupePlan& plan, uint32_t file, uint64_t sector) {
  for (const auto& r : plan.rounds)
    if (r.source.file == file && r.source.offset == sector * kSector) return &r;
  return nullptr;
}

// No round reads bytes that a round (another, or itself) writes into.
void expect_no_source_is_a_destination(const DedupePlan& plan) {
  for (const auto& r : plan.rounds)
    for (const auto& w : plan.rounds)
      for (const auto& d : w.destinations)
        EXPECT_FALSE(d.file == r.source.file && d.offset < r.source.offset + r.length &&
                     r.source.offset < d.offset + w.length)
            << "source f" << r.source.file << "@" << r.source.offset << " is written by a round";
}

struct ThreeCopies : ::testing::Test {
  // f0, f1, f2 hold the same 16 sectors, each in one extent of its own.
  ThreeCopies() {
    for (int i = 0; i < 3; ++i) fs.add_file(16 * kSector, seq(1, 16));
    sort_by_physical_identity(fs.scan.extents);
  }
  SyntheticFs fs;
};

// The images case: f1 is the source of f2's round and a destination of f0's. Made as
// planned, f2 takes references to f1's extent, which the plan counts freed.
TEST_F(ThreeCopies, ASourceThatIsADestinationIsTakenFromWhereItsBytesGo) {
  DedupePlan plan;
  plan.rounds = {round_of(1, 0, 16, {at(2, 0)}), round_of(0, 0, 16, {at(1, 0)})};
  // Unresolved, the plan says so: f1's extent is a source and not freed by it.
  const auto before = destination_extents(fs.scan, plan);
  ASSERT_EQ(before.size(), 2u);  // by address: f1's extent, then f2's
  EXPECT_TRUE(before[0].source);
  EXPECT_FALSE(before[0].freed_by_plan);

  const FileExtentIndex index(fs.scan);
  const auto changed = take_sources_past_destinations(plan, index);
  EXPECT_EQ(changed.rounds_changed, 1u);
  EXPECT_EQ(changed.bytes_moved, 16u * kSector);
  ASSERT_EQ(plan.rounds.size(), 2u);
  for (const auto& r : plan.rounds) EXPECT_EQ(r.source.file, 0u);
  expect_no_source_is_a_destination(plan);
  const auto after = destination_extents(fs.scan, plan);
  ASSERT_EQ(after.size(), 2u);
  for (const auto& e : after) EXPECT_TRUE(e.freed_by_plan && !e.source);
  EXPECT_EQ(predicted_freed(after).bytes, 32u * kSector);
  EXPECT_EQ(plan.planned_bytes, 32u * kSector);
}

// Only part of the source is moved: the round is cut where the cover starts and ends.
TEST_F(ThreeCopies, ASourceCoveredInPartIsCut) {
  DedupePlan plan;
  plan.rounds = {round_of(1, 0, 16, {at(2, 0)}), round_of(0, 4, 8, {at(1, 4)})};
  const FileExtentIndex index(fs.scan);
  take_sources_past_destinations(plan, index);
  ASSERT_EQ(plan.rounds.size(), 4u);
  // f1 [0,4) stays, [4,12) from f0, [12,16) stays; and the round that moves f1's middle.
  const DedupeRound* head = with_source(plan, 1, 0);
  const DedupeRound* middle = nullptr;
  for (const auto& r : plan.rounds)
    if (r.source.file == 0 && r.destinations.front().file == 2) middle = &r;
  const DedupeRound* tail = with_source(plan, 1, 12);
  ASSERT_TRUE(head && middle && tail);
  EXPECT_EQ(head->length, 4u * kSector);
  EXPECT_EQ(middle->source.offset, 4u * kSector);
  EXPECT_EQ(middle->destinations.front().offset, 4u * kSector);
  EXPECT_EQ(middle->length, 8u * kSector);
  EXPECT_EQ(tail->length, 4u * kSector);
  expect_no_source_is_a_destination(plan);
}

// Copies of copies: f3 <- f2 <- f1 <- f0 all read from f0.
TEST(ChainedSources, AChainIsFollowedToItsEnd) {
  SyntheticFs fs;
  for (int i = 0; i < 4; ++i) fs.add_file(8 * kSector, seq(1, 8));
  sort_by_physical_identity(fs.scan.extents);
  DedupePlan plan;
  plan.rounds = {round_of(2, 0, 8, {at(3, 0)}), round_of(1, 0, 8, {at(2, 0)}),
                 round_of(0, 0, 8, {at(1, 0)})};
  take_sources_past_destinations(plan, FileExtentIndex(fs.scan));
  for (const auto& r : plan.rounds) EXPECT_EQ(r.source.file, 0u);
  expect_no_source_is_a_destination(plan);
}

// Two groups that chose opposite sources: the walk stops, and no round is left that
// would dedupe a range onto itself.
TEST(ChainedSources, ALoopEndsAndDropsARangeOntoItself) {
  SyntheticFs fs;
  for (int i = 0; i < 2; ++i) fs.add_file(8 * kSector, seq(1, 8));
  sort_by_physical_identity(fs.scan.extents);
  DedupePlan plan;
  plan.rounds = {round_of(0, 0, 8, {at(1, 0)}), round_of(1, 0, 8, {at(0, 0)})};
  take_sources_past_destinations(plan, FileExtentIndex(fs.scan));
  for (const auto& r : plan.rounds)
    for (const auto& d : r.destinations)
      EXPECT_FALSE(d.file == r.source.file && d.offset == r.source.offset);
}

// Rounds no other round writes into are left as they were.
TEST_F(ThreeCopies, IndependentRoundsAreUnchanged) {
  DedupePlan plan;
  plan.rounds = {round_of(0, 0, 16, {at(1, 0), at(2, 0)})};
  const auto changed = take_sources_past_destinations(plan, FileExtentIndex(fs.scan));
  EXPECT_EQ(changed.rounds_changed, 0u);
  ASSERT_EQ(plan.rounds.size(), 1u);
  EXPECT_EQ(plan.rounds[0].destinations.size(), 2u);
}

}  // namespace
}  // namespace btrdedupe
