// The rules a CatalogSession chooses once per run (src/catalog/catalog_rules.h): the
// subfolder rule and what it allows, the record path of each way of reading, and what
// counts as a changed file.
#include <gtest/gtest.h>

#include "src/catalog/catalog_rules.h"

namespace btrdedupe {
namespace {

const std::string kOptions = "recursive=1 min_size=0 block_size=131072 partial=1 readonly=0";

CatalogScope scope(std::vector<std::string> roots, std::string options = kOptions) {
  return {std::move(roots), std::move(options), false};
}

bool is_side_run(const CatalogScopeRule& rule) {
  return rule.record_path(TreeRead::Whole) == RecordPath::Side;
}

TEST(CatalogScopeRule, SubfoldersOfTheCatalogsRootsWithTheSameOptionsAreASideRun) {
  const auto recorded = scope({"/mnt/pool", "/mnt/other"});
  EXPECT_TRUE(is_side_run(CatalogScopeRule::of(recorded, scope({"/mnt/pool/a"}))));
  EXPECT_TRUE(is_side_run(CatalogScopeRule::of(recorded, scope({"/mnt/pool/a", "/mnt/other"}))));
  EXPECT_TRUE(is_side_run(CatalogScopeRule::of(recorded, scope({"/mnt/pool"}))));
}

TEST(CatalogScopeRule, TheSameRootsAnotherScopeOrNoneRecordedAreTheCatalogsOwnRun) {
  const auto recorded = scope({"/mnt/pool"});
  EXPECT_FALSE(is_side_run(CatalogScopeRule::of(recorded, scope({"/mnt/pool"}))));
  EXPECT_FALSE(is_side_run(CatalogScopeRule::of(recorded, scope({"/mnt/poolside"}))));
  EXPECT_FALSE(is_side_run(CatalogScopeRule::of(recorded, scope({"/mnt/pool/a", "/mnt/b"}))));
  EXPECT_FALSE(is_side_run(
      CatalogScopeRule::of(recorded, scope({"/mnt/pool/a"}, kOptions + " exclude=*.o"))));
  EXPECT_FALSE(is_side_run(CatalogScopeRule::of(std::nullopt, scope({"/mnt/pool/a"}))));
  EXPECT_FALSE(is_side_run(CatalogScopeRule{}));
}

TEST(CatalogScopeRule, TheCatalogsOwnRunSetsItsScopeAndMayReadAnyWay) {
  const auto own = CatalogScopeRule::of(scope({"/mnt/pool"}), scope({"/mnt/pool"}));
  EXPECT_TRUE(own.sets_catalog_scope());
  EXPECT_TRUE(own.may_take_windows());
  EXPECT_TRUE(own.may_read_changes_only());
  EXPECT_TRUE(own.unmet_rows_are_stale());
  EXPECT_FALSE(own.outside_twins_are_sources());
  EXPECT_TRUE(own.source_roots().empty());
  const auto yes = [] { return true; };
  const auto no = [] { return false; };
  EXPECT_TRUE(own.reaches_twins_in(true, yes));
  EXPECT_FALSE(own.reaches_twins_in(false, yes));
  EXPECT_TRUE(own.reaches_twins_in(true, no));
  EXPECT_EQ(own.record_path(TreeRead::Whole), RecordPath::Whole);
  EXPECT_EQ(own.record_path(TreeRead::Changed), RecordPath::Changed);
  EXPECT_EQ(own.record_path(TreeRead::Windows), RecordPath::Windows);
}

TEST(CatalogScopeRule, ASideRunKeepsTheCatalogsRowsAndReachesTwinsUnderItsRoots) {
  const auto side = CatalogScopeRule::of(scope({"/mnt/pool"}), scope({"/mnt/pool/a"}));
  EXPECT_FALSE(side.sets_catalog_scope());
  EXPECT_FALSE(side.may_take_windows());
  EXPECT_FALSE(side.may_read_changes_only());
  EXPECT_FALSE(side.unmet_rows_are_stale());
  EXPECT_TRUE(side.outside_twins_are_sources());
  EXPECT_EQ(side.source_roots(), (std::vector<std::string>{"/mnt/pool"}));
  EXPECT_TRUE(side.reaches_twins_in(false, [] { return true; }));
  EXPECT_FALSE(side.reaches_twins_in(false, [] { return false; }));
  for (auto read : {TreeRead::Whole, TreeRead::RootsWithSources})
    EXPECT_EQ(side.record_path(read), RecordPath::Side);
}

TEST(TreeRead, OnlyAReadOfWhatChangedCountsAsIncremental) {
  EXPECT_TRUE(counts_as_incremental(TreeRead::Changed));
  EXPECT_FALSE(counts_as_incremental(TreeRead::Whole));
  EXPECT_FALSE(counts_as_incremental(TreeRead::RootsWithSources));
  EXPECT_FALSE(counts_as_incremental(TreeRead::Windows));
}

TEST(ChangeRule, AFileChangesWhenItHasNoRowOrItsRowDiffers) {
  const ChangeRule rule;
  EXPECT_TRUE(rule.changed(false, false));
  EXPECT_TRUE(rule.changed(true, true));
  EXPECT_FALSE(rule.changed(true, false));
  EXPECT_TRUE(rule.told_by_generations());
}

TEST(ChangeRule, EveryFileCountsWhenADedupeRunFollowsPendingDuplicates) {
  const auto rule = ChangeRule::after_last_run(true, true);
  EXPECT_TRUE(rule.changed(true, false));
  EXPECT_FALSE(rule.told_by_generations());
  // Without a dedupe, or with nothing pending, rows that stand serve as they are.
  EXPECT_FALSE(ChangeRule::after_last_run(false, true).changed(true, false));
  EXPECT_FALSE(ChangeRule::after_last_run(true, false).changed(true, false));
  EXPECT_TRUE(ChangeRule::after_last_run(false, true).told_by_generations());
}

}  // namespace
}  // namespace btrdedupe
