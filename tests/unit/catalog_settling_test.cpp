// The rule by which a follower's cycle leaves a file still being written for later.
#include <gtest/gtest.h>

#include "src/catalog/catalog_file_state.h"

namespace btrdedupe {
namespace {

using catalog_state::unsettled_until;

btrfs::InodeItem changed_at(int64_t ctime, int64_t mtime) {
  btrfs::InodeItem item;
  item.ctime.sec = ctime;
  item.mtime.sec = mtime;
  return item;
}

TEST(CatalogSettling, AFileChangedWithinSettleSecondsWaitsUntilTheyPass) {
  EXPECT_EQ(unsettled_until(changed_at(1000, 990), 15, 1010), 1015);
  EXPECT_FALSE(unsettled_until(changed_at(1000, 990), 15, 1015));
}

TEST(CatalogSettling, TheLaterOfCtimeAndMtimeCounts) {
  // cp -a keeps an old mtime: the copy's ctime is when it landed.
  EXPECT_EQ(unsettled_until(changed_at(1000, 10), 15, 1001), 1015);
  // A touch -d into the future keeps it waiting until then.
  EXPECT_EQ(unsettled_until(changed_at(1000, 2000), 15, 1001), 2015);
}

TEST(CatalogSettling, FractionsRoundUpAndNoSettleReadsEverything) {
  EXPECT_EQ(unsettled_until(changed_at(1000, 1000), 0.5, 1000), 1001);
  EXPECT_FALSE(unsettled_until(changed_at(1000, 1000), 0, 1000));
}

}  // namespace
}  // namespace btrdedupe
