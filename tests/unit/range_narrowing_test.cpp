// Narrowing an unequal range to its equal parts, against a fake kernel compare.
#include "src/match/range_narrowing.h"

#include <gtest/gtest.h>

#include <set>

namespace btrdedupe {
namespace {

constexpr uint64_t kSector = 4096;

// Two files equal but for the sectors in `differ`; records what was shared.
struct FakeCompare {
  std::set<uint64_t> differ;  // sector indexes
  uint64_t shared = 0;
  btrfs::Result<btrfs::DedupeOutcome> operator()(uint64_t offset, uint64_t length) {
    for (uint64_t s = offset / kSector; s * kSector < offset + length; ++s)
      if (differ.count(s)) return btrfs::DedupeOutcome{btrfs::DedupeStatus::Differs, 0, 0};
    shared += length;
    return btrfs::DedupeOutcome{btrfs::DedupeStatus::Same, 0, length};
  }
};

TEST(RangeNarrowing, OneDifferingSectorIsAllThatStays) {
  FakeCompare k{{17}};
  const uint64_t len = 4096 * kSector;  // 16 MiB
  const auto n = narrow_unequal_range(len, kSector, 96,
                                      [&](uint64_t o, uint64_t l) { return k(o, l); });
  EXPECT_EQ(n.bytes_shared, len - kSector);
  EXPECT_EQ(n.bytes_unequal, kSector);
  EXPECT_EQ(k.shared, len - kSector);
  EXPECT_FALSE(n.gave_up);
  EXPECT_LE(n.calls, 2u * 12 + 2);  // a bisection: two calls per level
}

TEST(RangeNarrowing, AnUnalignedTailKeepsItsEnd) {
  FakeCompare k{{0}};
  const uint64_t len = 3 * kSector + 100;  // ends at EOF of both files
  uint64_t last_end = 0;
  const auto n = narrow_unequal_range(len, kSector, 96, [&](uint64_t o, uint64_t l) {
    EXPECT_EQ(o % kSector, 0u);
    last_end = std::max(last_end, o + l);
    return k(o, l);
  });
  EXPECT_EQ(n.bytes_shared, 2 * kSector + 100);
  EXPECT_EQ(last_end, len);
}

TEST(RangeNarrowing, TheCallBudgetBoundsTheWork) {
  FakeCompare k;
  for (uint64_t s = 0; s < 4096; s += 2) k.differ.insert(s);  // every other sector
  const auto n = narrow_unequal_range(4096 * kSector, kSector, 96,
                                      [&](uint64_t o, uint64_t l) { return k(o, l); });
  EXPECT_TRUE(n.gave_up);
  EXPECT_EQ(n.calls, 96u);
}

TEST(RangeNarrowing, ARefusalStopsIt) {
  unsigned calls = 0;
  const auto n = narrow_unequal_range(64 * kSector, kSector, 96, [&](uint64_t, uint64_t) {
    ++calls;
    return btrfs::Result<btrfs::DedupeOutcome>(btrfs::DedupeOutcome{btrfs::DedupeStatus::Error, EPERM, 0});
  });
  EXPECT_TRUE(n.gave_up);
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(n.bytes_shared, 0u);
}

}  // namespace
}  // namespace btrdedupe
