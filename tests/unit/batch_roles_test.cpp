// A batch's roles and the window bookkeeping that asks them, without a disk.
#include <gtest/gtest.h>

#include "src/match/batch_roles.h"
#include "src/run/run_stages.h"

namespace btrdedupe {
namespace {

DuplicateGroup group(std::vector<uint32_t> files, bool whole) {
  DuplicateGroup g;
  g.length = 4096;
  g.whole_file = whole;
  for (uint32_t f : files) g.members.push_back({f, 0, f, 1});
  return g;
}

TEST(BatchRoles, EachRoleAnswersAsItsRule) {
  const BatchRoles whole;  // a whole run: every file its own, any index
  EXPECT_FALSE(whole.in_windows());
  EXPECT_EQ(whole.of(12345), BatchRole::Own);
  EXPECT_FALSE(whole.counted_before(3) || whole.left_out(3) || whole.grouped_before(3));

  BatchRoles w = BatchRoles::window(6);
  EXPECT_TRUE(w.in_windows());
  w.set(1, BatchRole::Candidate);
  w.set(2, BatchRole::AheadTwin);
  w.set(3, BatchRole::Settled);
  w.set(4, BatchRole::EarlierTwin);
  w.set(5, BatchRole::EarlierGroupedTwin);
  const std::vector<bool> counted = {false, false, false, false, true, true};
  const std::vector<bool> left = {false, false, false, true, false, false};
  for (uint32_t f = 0; f < 6; ++f) {
    EXPECT_EQ(w.counted_before(f), counted[f]) << f;
    EXPECT_EQ(w.left_out(f), left[f]) << f;
    EXPECT_EQ(w.grouped_before(f), f == 5) << f;
  }
  for (uint32_t f = 0; f < 6; ++f) EXPECT_EQ(w.source_only(f), counted[f]) << f;
  EXPECT_FALSE(BatchRoles::incremental(2).in_windows());
}

// Files 0, 1: earlier twins; 2: an earlier twin an earlier group held; 3, 4: the window's.
TEST(WindowGroups, GroupsOfEarlierTwinsGoAndGrownGroupsAreNotCountedAgain) {
  BatchRoles roles = BatchRoles::window(5);
  roles.set(0, BatchRole::EarlierTwin);
  roles.set(1, BatchRole::EarlierTwin);
  roles.set(2, BatchRole::EarlierGroupedTwin);
  MatchResult m;
  m.groups = {group({0, 1}, true),      // earlier twins alone: their own window's group
              group({0, 3}, true),      // a new group: one earlier source, one own copy
              group({0, 1, 4}, true),   // grows the group {0, 1} counted there
              group({2, 3}, false),     // grows the group that held 2
              group({3, 4}, false)};    // the window's own partial group
  m.whole_file_groups = 4;
  m.partial_groups = 2;
  const auto grown = drop_groups_of_earlier_windows(roles, m);
  ASSERT_EQ(m.groups.size(), 4u);  // only {0, 1} goes: the others still dedupe own files
  EXPECT_EQ(grown, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(m.whole_file_groups, 1u);
  EXPECT_EQ(m.partial_groups, 1u);
}

}  // namespace
}  // namespace btrdedupe
