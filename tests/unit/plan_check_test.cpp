// Plan against disk: each planned extent still allocated after a run gets its reason.
#include "src/plan/plan_check.h"

#include <gtest/gtest.h>

#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

// f0 and f1 hold the same 8 sectors in one extent each; the plan moves f1 onto f0.
struct PlanCheckTest : ::testing::Test {
  PlanCheckTest() {
    fs.add_file(8 * kSector, seq(1, 8));
    fs.add_file(8 * kSector, seq(1, 8));
    sort_by_physical_identity(fs.scan.extents);
    DedupeRound r;
    r.source = {0, 0};
    r.length = 8 * kSector;
    r.destinations = {{1, 0}};
    plan.rounds.push_back(r);
    extents = destination_extents(fs.scan, plan);
    footprint = PlanFootprint(fs.scan, plan);
  }
  // The confirmation scan: f1 references `bytenr` at [from, to) in sectors, or nothing.
  ScanResult after_with_f1_on(uint64_t bytenr, uint64_t from, uint64_t to) const {
    ScanResult after = fs.scan;
    after.extents.clear();
    FileExtent e;
    e.file = 1;
    e.file_offset = from * kSector;
    e.length = (to - from) * kSector;
    e.disk_bytenr = bytenr;
    e.disk_num_bytes = 8 * kSector;
    if (to > from) after.extents.push_back(e);
    return after;
  }
  SyntheticFs fs;
  DedupePlan plan;
  std::vector<PhysicalExtent> extents;
  PlanFootprint footprint;
};

TEST_F(PlanCheckTest, AFreedExtentIsCountedFreed) {
  ASSERT_EQ(extents.size(), 1u);
  const auto c = check_plan(extents, {false}, footprint, after_with_f1_on(0, 0, 0));
  EXPECT_EQ(c.planned.extents, 1u);
  EXPECT_EQ(c.freed.extents, 1u);
  EXPECT_EQ(c.freed.bytes, 8u * kSector);
  EXPECT_EQ(c.kept_extents(), 0u);
}

TEST_F(PlanCheckTest, AReferenceInADestinationRangeWasNotDeduped) {
  const auto c = check_plan(extents, {true}, footprint, after_with_f1_on(extents[0].bytenr, 2, 4));
  EXPECT_EQ(c.not_deduped.extents, 1u);
  EXPECT_EQ(c.freed.extents, 0u);
}

TEST_F(PlanCheckTest, NoReferenceTheConfirmationSawIsOutsideTheScan) {
  const auto c = check_plan(extents, {true}, footprint, after_with_f1_on(0, 0, 0));
  EXPECT_EQ(c.outside_scan.extents, 1u);
}

// A reference past the destination range (f1 grew since, or a remainder left).
TEST_F(PlanCheckTest, AReferenceOutsideTheDestinationsIsAKeptRemainder) {
  const auto c = check_plan(extents, {true}, footprint, after_with_f1_on(extents[0].bytenr, 8, 9));
  EXPECT_EQ(c.remainder_kept.extents, 1u);
}

// A plan whose round reads from the extent it frees (what chained sources prevent).
TEST_F(PlanCheckTest, AnExtentARoundReadFromIsUsedAsSource) {
  DedupeRound back = plan.rounds[0];
  back.source = {1, 0};
  back.destinations = {{0, 0}};
  plan.rounds.push_back(back);
  const PlanFootprint both(fs.scan, plan);
  PhysicalExtent planned = extents[0];
  planned.freed_by_plan = true;
  const auto c = check_plan({planned}, {true}, both, after_with_f1_on(0, 0, 0));
  EXPECT_EQ(c.used_as_source.extents, 1u);
}

TEST_F(PlanCheckTest, AnUnplannedExtentThatWentIsCountedApart) {
  PhysicalExtent unplanned = extents[0];
  unplanned.freed_by_plan = false;
  const auto c = check_plan({unplanned}, {false}, footprint, after_with_f1_on(0, 0, 0));
  EXPECT_EQ(c.planned.extents, 0u);
  EXPECT_EQ(c.freed_unplanned.extents, 1u);
}

}  // namespace
}  // namespace btrdedupe
