#include "src/scope/snapshot_family.h"

#include <gtest/gtest.h>

namespace btrdedupe {
namespace {

btrfs::Subvolume subvolume(uint64_t id, uint8_t uuid, uint8_t parent_uuid, bool readonly) {
  btrfs::Subvolume s;
  s.id = id;
  s.uuid[0] = uuid;
  s.parent_uuid[0] = parent_uuid;  // 0: nil, not a snapshot
  s.readonly = readonly;
  return s;
}

using Ids = std::vector<uint64_t>;

TEST(SnapshotFamily, SnapshotsFoldIntoTheirOriginFirstThenEarlierSiblings) {
  const SnapshotFamily family({subvolume(256, 1, 0, false), subvolume(257, 2, 1, true),
                               subvolume(258, 3, 1, true)});
  EXPECT_EQ(family.folds_into(256), Ids{});
  EXPECT_EQ(family.folds_into(257), (Ids{256}));
  EXPECT_EQ(family.folds_into(258), (Ids{256, 257}));
  EXPECT_EQ(family.folded_into(256), (Ids{257, 258}));
  EXPECT_EQ(family.folded_into(257), (Ids{258}));
  EXPECT_EQ(family.folded_into(258), Ids{});
}

TEST(SnapshotFamily, SnapshotsOfAnOriginOutsideTheRunFoldIntoEachOther) {
  // A backup pool keeps the snapshots; the subvolume they were taken from is elsewhere.
  const SnapshotFamily family({subvolume(300, 5, 9, true), subvolume(301, 6, 9, true)});
  EXPECT_EQ(family.folds_into(300), Ids{});
  EXPECT_EQ(family.folds_into(301), (Ids{300}));
  EXPECT_EQ(family.folded_into(300), (Ids{301}));
}

TEST(SnapshotFamily, OriginReadAfterItsSnapshotIsStillPreferred) {
  const SnapshotFamily family({subvolume(257, 2, 1, true), subvolume(256, 1, 0, false)});
  EXPECT_EQ(family.folds_into(257), (Ids{256}));
  EXPECT_EQ(family.folded_into(256), (Ids{257}));
}

TEST(SnapshotFamily, WritableSnapshotsAndUnrelatedSubvolumesFoldNothing) {
  const SnapshotFamily family({subvolume(256, 1, 0, false), subvolume(257, 2, 1, false),
                               subvolume(258, 3, 4, true), subvolume(259, 4, 0, true)});
  // 257 is writable: it may be a destination, so it is read as any subvolume.
  EXPECT_EQ(family.folds_into(257), Ids{});
  // 258 was taken from 259 (read-only, not a snapshot itself): it folds into it.
  EXPECT_EQ(family.folds_into(258), (Ids{259}));
  EXPECT_EQ(family.folds_into(259), Ids{});
  EXPECT_FALSE(family.empty());
  EXPECT_TRUE(SnapshotFamily({subvolume(256, 1, 0, false)}).empty());
}

}  // namespace
}  // namespace btrdedupe
