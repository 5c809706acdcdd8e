#include "src/report/work_listing.h"

#include <gtest/gtest.h>

#include "tests/unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

// A plan of `groups` groups, queued largest first; group g has one round per destination
// file, of (groups - g) sectors, with `dests` destinations each.
DedupePlan plan_of(uint32_t groups, uint32_t dests, uint32_t files) {
  DedupePlan plan;
  for (uint32_t g = 0; g < groups; ++g) {
    DedupeRound round;
    round.group = g;
    round.source.file = g % files;
    round.length = uint64_t{groups - g} * kSector;
    for (uint32_t d = 0; d < dests; ++d) round.destinations.push_back({(g + 1 + d) % files, 0});
    plan.rounds.push_back(round);
    plan.rounds.push_back(round);  // a second round of the same group, same destinations
  }
  return plan;
}

TEST(WorkListing, GroupsAreCountedWholeAndListedInQueueOrder) {
  SyntheticFs fs;
  for (int i = 0; i < 4; ++i) fs.add_file(kSector, {1});
  const DedupePlan plan = plan_of(3, 2, 4);
  // Both rounds of group 0 and the first of group 1 ran.
  const std::vector<uint8_t> started = {1, 1, 1};
  const WorkListing w = list_work(fs.scan, plan, started);
  EXPECT_EQ(w.groups_done, 1u);
  EXPECT_EQ(w.groups_left, 2u);
  ASSERT_EQ(w.done.size(), 1u);
  EXPECT_EQ(w.done[0].source, "/synthetic/f0");
  EXPECT_EQ(w.done[0].bytes, 2 * 2 * 3 * kSector);
  EXPECT_EQ(w.done[0].bytes_left, 0u);
  EXPECT_EQ(w.done[0].destinations, 2u);  // the same two files in both rounds
  ASSERT_EQ(w.left.size(), 2u);
  EXPECT_EQ(w.left[0].bytes, 2 * 2 * 2 * kSector);
  EXPECT_EQ(w.left[0].bytes_left, 2 * 2 * kSector);
  EXPECT_EQ(w.left[1].bytes_left, w.left[1].bytes);
  EXPECT_EQ(w.bytes_done, w.done[0].bytes + w.left[0].bytes - w.left[0].bytes_left);
  EXPECT_EQ(w.bytes_left, w.left[0].bytes_left + w.left[1].bytes_left);
}

TEST(WorkListing, ListsAreBoundedButCountsAreNot) {
  SyntheticFs fs;
  for (int i = 0; i < 8; ++i) fs.add_file(kSector, {1});
  const uint32_t groups = kWorkListed + 500;
  const WorkListing w = list_work(fs.scan, plan_of(groups, 1, 8), {});
  EXPECT_EQ(w.groups_left, groups);
  EXPECT_EQ(w.left.size(), kWorkListed);
  EXPECT_EQ(w.left.front().bytes, 2ull * groups * kSector);  // the largest first
  EXPECT_TRUE(w.done.empty());
  // Windows add up: counts grow, lists stay bounded.
  WorkListing all = w;
  all.add(list_work(fs.scan, plan_of(10, 1, 8), std::vector<uint8_t>(20, 1)));
  EXPECT_EQ(all.groups_left, groups);
  EXPECT_EQ(all.groups_done, 10u);
  EXPECT_EQ(all.left.size(), kWorkListed);
  EXPECT_EQ(all.done.size(), 10u);
}

TEST(WorkListing, AnEmptyPlanListsNothing) {
  SyntheticFs fs;
  EXPECT_TRUE(list_work(fs.scan, DedupePlan{}, {}).empty());
}

}  // namespace
}  // namespace btrdedupe
