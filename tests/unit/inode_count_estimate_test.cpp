#include "src/scope/inode_count_estimate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kSub = 300;

class InodeCountEstimate : public ::testing::Test {
 protected:
  MemoryTreeSource source;
  SyntheticTree tree{source, kSub};
};

// No more inode numbers than probes: every one is looked at, so the count is exact. A
// directory, a symlink and a number freed again (a deleted file) are not regular files.
TEST_F(InodeCountEstimate, ASmallTreeIsCountedExactly) {
  uint64_t ino = 257;
  tree.dir(ino++, 256, "d");
  for (int i = 0; i < 40; ++i) tree.file(ino++, 257, "f" + std::to_string(i), 4096 * i);
  tree.inode(ino, 0120777, 5);  // a symlink
  tree.name_of(ino++, 257, "link");
  ++ino;  // deleted
  tree.file(ino, 256, "last", 0);
  EXPECT_EQ(highest_objectid(source, kSub), ino);
  EXPECT_EQ(estimate_regular_files(source, kSub), 41u);
  EXPECT_EQ(estimate_regular_files(source, kSub, 1000), 41u);
}

// A tree laid out as cp -a lays out a source tree (a directory, then its files), with a
// share of its numbers freed by deletions: within a few percent from 128 probes, in as
// many searches and a bisection for the highest number.
TEST_F(InodeCountEstimate, ALargeTreeIsEstimatedFromAFewProbes) {
  uint64_t ino = 257, files = 0;
  for (int d = 0; d < 400; ++d) {
    const uint64_t dir = ino++;
    tree.dir(dir, 256, "d" + std::to_string(d));
    for (int f = 0; f < 3 + d % 23; ++f, ++ino) {
      if ((ino * 7) % 10 == 0) continue;  // deleted since
      tree.file(ino, dir, "f" + std::to_string(f), 100 + f);
      ++files;
    }
  }
  const uint64_t before = source.searches();
  const uint64_t estimate = estimate_regular_files(source, kSub);
  EXPECT_LE(source.searches() - before, kEstimateProbes + 70u);
  EXPECT_GT(files, 4000u);
  const auto exact = static_cast<double>(files);
  EXPECT_NEAR(static_cast<double>(estimate), exact, 0.05 * exact)
      << "estimate " << estimate << " of " << files;
}

TEST_F(InodeCountEstimate, AnEmptyTreeHasNone) {
  MemoryTreeSource empty;
  EXPECT_EQ(estimate_regular_files(empty, kSub), 0u);
  EXPECT_EQ(estimate_regular_files(source, kSub), 0u);  // its top directory only
  EXPECT_EQ(estimate_regular_files(source, kSub, 0), 0u);
}

// A directory of subvolumes (copies, a backup pool): a whole read keeps every writable
// one's files, and reaches a read-only snapshot's count while it reads that tree.
TEST(FilesHeldAtOnce, KeptSubvolumesAddUpAndTheLargestFoldingSnapshotBoundsFromBelow) {
  EXPECT_EQ(files_held_at_once({}), 0u);
  EXPECT_EQ(files_held_at_once({{100, false}, {200, false}, {50, false}}), 350u);
  // Snapshots of a 100-file tree: most of their files fold into it, so they add nothing.
  EXPECT_EQ(files_held_at_once({{100, false}, {100, true}, {90, true}}), 100u);
  // A snapshot larger than what is kept (its origin was emptied since).
  EXPECT_EQ(files_held_at_once({{10, false}, {400, true}, {300, true}}), 400u);
  EXPECT_EQ(files_held_at_once({{0, false}, {30, true}}), 30u);
}

}  // namespace
}  // namespace btrdedupe::test
