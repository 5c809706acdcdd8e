// Round planning on synthetic scans.
#include "src/plan/dedupe_plan.h"

#include <gtest/gtest.h>

#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

TEST(DedupePlan, OneRoundPerPairWithTheFirstCopyAsSource) {
  SyntheticFs fs;
  fs.add_file(5 * kSector - 10, seq(1, 5));
  fs.add_file(5 * kSector - 10, seq(1, 5));
  const auto m = fs.match();
  const auto plan = plan_rounds(fs.scan, m, {});
  ASSERT_EQ(plan.rounds.size(), 1u);
  const auto& r = plan.rounds[0];
  EXPECT_EQ(r.source.file, 0u);
  EXPECT_EQ(r.length, 5 * kSector - 10);  // to EOF of both: an unaligned tail is fine
  ASSERT_EQ(r.destinations.size(), 1u);
  EXPECT_EQ(r.destinations[0].file, 1u);
  EXPECT_EQ(plan.planned_bytes, 5 * kSector - 10);
}

// The plan is one round from `source` to `destinations` (file indexes), in that order.
void expect_one_round(const DedupePlan& plan, uint32_t source,
                      const std::vector<uint32_t>& destinations) {
  ASSERT_EQ(plan.rounds.size(), 1u);
  EXPECT_EQ(plan.rounds[0].source.file, source);
  std::vector<uint32_t> files;
  for (const auto& d : plan.rounds[0].destinations) files.push_back(d.file);
  EXPECT_EQ(files, destinations);
}

// A window of a windowed run holds its own files and earlier windows' twins of them. The
// earlier twins were planned in their own window (against each other, say refused by the
// kernel): they are this window's sources, never its destinations, even where this
// window's copy is the least fragmented. Planned again, a report run counted the bytes of
// an earlier copy once per later window (4 copies of linux-source: 3,982,244,632 bytes
// planned against a whole run's 3,823,181,037).
TEST(DedupePlan, EarlierWindowsFilesAreSourcesNeverDestinations) {
  SyntheticFs fs;
  const auto a = fs.add_file(4 * kSector, seq(1, 4), {1, 1, 1, 1});  // earlier windows'
  const auto b = fs.add_file(4 * kSector, seq(1, 4), {1, 1, 1, 1});  // copies
  const auto c = fs.add_file(4 * kSector, seq(1, 4));  // this window's copy, one extent
  const auto m = fs.match();
  BatchRoles earlier = BatchRoles::window(3);
  earlier.set(a, BatchRole::EarlierTwin);
  earlier.set(b, BatchRole::EarlierGroupedTwin);
  PlanOptions o;
  o.roles = &earlier;
  const auto plan = plan_rounds(fs.scan, m, o);
  expect_one_round(plan, a, {c});
  EXPECT_EQ(plan.planned_bytes, 4 * kSector);
  // Read whole, the same group has the least fragmented copy as its source and both
  // others as destinations.
  const auto whole = plan_rounds(fs.scan, m, {});
  expect_one_round(whole, c, {a, b});
  EXPECT_EQ(whole.planned_bytes, 2 * 4 * kSector);
  // One earlier twin and the window's copy: the twin is the source.
  BatchRoles one = BatchRoles::window(3);
  one.set(a, BatchRole::EarlierTwin);
  o.roles = &one;
  expect_one_round(plan_rounds(fs.scan, m, o), a, {b, c});
}

TEST(DedupePlan, MostReferencedExtentBecomesTheSource) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));                         // copy 0, alone
  const auto b = fs.add_file(4 * kSector, seq(1, 4));          // copy 1 ...
  fs.add_file(4 * kSector, seq(1, 4), {}, static_cast<int>(b));  // ... with a reflink
  const auto m = fs.match();
  ASSERT_EQ(m.groups.size(), 1u);
  const auto& g = m.groups[0];
  EXPECT_EQ(g.members[choose_target(fs.scan, g)].file, b);
  const auto plan = plan_rounds(fs.scan, m, {});
  ASSERT_EQ(plan.rounds.size(), 1u);
  ASSERT_EQ(plan.rounds[0].destinations.size(), 1u);  // the reflink is not touched
  EXPECT_EQ(plan.rounds[0].destinations[0].file, 0u);
}

TEST(DedupePlan, PartialGroupsKeepTheEarliestFileAsTheirSource) {
  // The disk-images case in small: b holds a's two halves the other way round, c is a
  // shifted by two sectors. Each group's own fewest-extents choice would take b as the
  // source of a's second half and c as the source of all of a, so that a's extents both
  // stay (targets) and go (destinations) and none of the three images is freed whole.
  SyntheticFs fs;
  auto content = seq(1, 16);
  const auto a = fs.add_file(16 * kSector, content, {8, 2, 6});
  auto swapped = seq(9, 8);
  for (uint32_t v : seq(1, 8)) swapped.push_back(v);
  fs.add_file(16 * kSector, swapped, {8, 8});
  auto shifted = seq(100, 2);
  shifted.insert(shifted.end(), content.begin(), content.end());
  fs.add_file(18 * kSector, shifted, {18});
  const auto m = fs.match(4 * kSector);
  ASSERT_EQ(m.partial_groups, 3u);
  const auto plan = plan_rounds(fs.scan, m, {});
  ASSERT_FALSE(plan.rounds.empty());
  for (const auto& r : plan.rounds) {
    EXPECT_EQ(r.source.file, a);
    for (const auto& d : r.destinations) EXPECT_NE(d.file, a);
  }
  EXPECT_EQ(plan.planned_bytes, 2 * 16 * kSector);
}

TEST(DedupePlan, ReadOnlySnapshotsAreSourcesNeverDestinations) {
  SyntheticFs fs;
  const auto rw = fs.add_file(4 * kSector, seq(1, 4));
  const auto ro = fs.add_file(4 * kSector, seq(1, 4));
  fs.in_subvolume(rw, 256, false);
  fs.in_subvolume(ro, 257, true);
  const auto m = fs.match();
  auto plan = plan_rounds(fs.scan, m, {});
  ASSERT_EQ(plan.rounds.size(), 1u);
  EXPECT_EQ(plan.rounds[0].source.file, ro);
  EXPECT_EQ(plan.rounds[0].destinations[0].file, rw);

  // Two read-only copies: nothing may change unless allowed.
  SyntheticFs both;
  both.in_subvolume(both.add_file(4 * kSector, seq(1, 4)), 300, true);
  both.in_subvolume(both.add_file(4 * kSector, seq(1, 4)), 300, true);
  plan = plan_rounds(both.scan, both.match(), {});
  EXPECT_TRUE(plan.rounds.empty());
  EXPECT_EQ(plan.readonly_members_skipped, 1u);
  PlanOptions allow;
  allow.dedupe_readonly = true;
  EXPECT_EQ(plan_rounds(both.scan, both.match(), allow).rounds.size(), 1u);
}

TEST(DedupePlan, DataThatSnapshotsAlsoHoldIsNotMoved) {
  // x and y: equal files of yesterday's copy, also held by a read-only snapshot (folded);
  // z: today's unshared copy. Only z is worth a call: y's extent stays alive anyway.
  SyntheticFs fs;
  const auto x = fs.add_file(4 * kSector, seq(1, 4));
  const auto y = fs.add_file(4 * kSector, seq(1, 4));
  const auto z = fs.add_file(4 * kSector, seq(1, 4));
  fs.scan.files[x].readonly_alias = true;
  fs.scan.files[y].readonly_alias = true;
  const auto plan = plan_rounds(fs.scan, fs.match(), {});
  ASSERT_EQ(plan.rounds.size(), 1u);
  ASSERT_EQ(plan.rounds[0].destinations.size(), 1u);
  EXPECT_EQ(plan.rounds[0].destinations[0].file, z);
  EXPECT_EQ(plan.readonly_members_skipped, 1u);
}

// A --hashfile run of a subfolder: a catalogued twin outside its roots is the source of
// the copy inside them, and never written to, even with --dedupe-readonly and when the
// copy inside would win every other tie (it comes first in scan order).
TEST(DedupePlan, TwinsOutsideTheRootsAreSourcesNeverDestinations) {
  SyntheticFs fs;
  const auto inside = fs.add_file(4 * kSector, seq(1, 4));
  const auto outside = fs.add_file(4 * kSector, seq(1, 4));
  fs.scan.files[outside].outside_roots = true;
  PlanOptions allow;
  allow.dedupe_readonly = true;
  for (const PlanOptions& o : {PlanOptions{}, allow}) {
    const auto plan = plan_rounds(fs.scan, fs.match(), o);
    ASSERT_EQ(plan.rounds.size(), 1u);
    EXPECT_EQ(plan.rounds[0].source.file, outside);
    ASSERT_EQ(plan.rounds[0].destinations.size(), 1u);
    EXPECT_EQ(plan.rounds[0].destinations[0].file, inside);
  }

  // Only outside copies differ from the chosen source: nothing to do.
  SyntheticFs fs2;
  const auto shared = fs2.add_file(4 * kSector, seq(1, 4));
  fs2.add_file(4 * kSector, seq(1, 4), {}, static_cast<int>(shared));  // its reflink
  const auto far = fs2.add_file(4 * kSector, seq(1, 4));
  fs2.scan.files[far].outside_roots = true;
  EXPECT_TRUE(plan_rounds(fs2.scan, fs2.match(), {}).rounds.empty());
}

TEST(DedupePlan, LongRangesSplitIntoRoundsAndManyCopiesIntoCalls) {
  SyntheticFs fs;
  for (int i = 0; i < 300; ++i) fs.add_file(10 * kSector, seq(1, 10));
  PlanOptions o;
  o.round_bytes = 4 * kSector;
  const auto plan = plan_rounds(fs.scan, fs.match(), o);
  // 3 pieces (4+4+2 sectors) x ceil(299 / 127) = 3 calls each.
  ASSERT_EQ(plan.rounds.size(), 9u);
  size_t dests = 0;
  for (const auto& r : plan.rounds) {
    EXPECT_LE(r.destinations.size(), btrfs::kMaxDedupeDestinations);
    EXPECT_TRUE(r.length == 4 * kSector || r.length == 2 * kSector);
    dests += r.destinations.size();
  }
  EXPECT_EQ(dests, 3u * 299);
  EXPECT_EQ(plan.planned_bytes, 299u * 10 * kSector);
}

TEST(DedupePlan, RoundsRunInPhysicalOrder) {
  SyntheticFs fs;
  for (int i = 0; i < 6; ++i) fs.add_file(2 * kSector, seq(static_cast<uint32_t>(10 * (i / 2)), 2));
  const auto plan = plan_rounds(fs.scan, fs.match(), {});
  ASSERT_EQ(plan.rounds.size(), 3u);
  for (size_t i = 1; i < plan.rounds.size(); ++i)
    EXPECT_LT(plan.rounds[i - 1].disk_order, plan.rounds[i].disk_order);
}

// A time-boxed run: the group that would share the most bytes goes first, then the next;
// a long group's rounds stay together and in their physical order.
TEST(DedupePlan, MostValuableGroupsFirstWhenTimeBoxed) {
  SyntheticFs fs;
  fs.add_file(2 * kSector, seq(100, 2));  // small pair
  fs.add_file(2 * kSector, seq(100, 2));
  const uint64_t big = 40ULL << 20;       // three copies of 40 MiB: 3 rounds x 2 destinations
  for (int i = 0; i < 3; ++i) fs.add_file(big, seq(1000, static_cast<uint32_t>(big / kSector)));
  fs.add_file(8 * kSector, seq(500, 8));  // a pair of 8 sectors
  fs.add_file(8 * kSector, seq(500, 8));
  PlanOptions po;
  po.most_valuable_first = true;
  const auto plan = plan_rounds(fs.scan, fs.match(), po);
  const auto value = group_values(plan);
  ASSERT_GE(plan.rounds.size(), 5u);
  for (size_t i = 1; i < plan.rounds.size(); ++i)
    EXPECT_GE(value[plan.rounds[i - 1].group], value[plan.rounds[i].group]);
  EXPECT_EQ(plan.rounds.front().source.file, 2u);  // the 40 MiB group
  EXPECT_EQ(plan.rounds.front().destinations.size(), 2u);
  EXPECT_EQ(plan.rounds.back().length, 2 * kSector);  // the small pair last
  for (size_t i = 1; i < plan.rounds.size(); ++i)
    if (plan.rounds[i].group == plan.rounds[i - 1].group) {
      EXPECT_LT(plan.rounds[i - 1].disk_order, plan.rounds[i].disk_order);
    }
  const auto physical = plan_rounds(fs.scan, fs.match(), {});
  EXPECT_EQ(physical.planned_bytes, plan.planned_bytes);  // the same work, another order
  EXPECT_EQ(physical.rounds.size(), plan.rounds.size());
}

}  // namespace
}  // namespace btrdedupe
