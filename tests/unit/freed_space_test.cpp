// What a plan frees: whole physical extents whose every reference it moves.
#include "src/plan/freed_space.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "btrfs/fd.h"
#include "unit/real_files.h"
#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

std::vector<PhysicalExtent> planned_extents(SyntheticFs& fs) {
  sort_by_physical_identity(fs.scan.extents);
  const auto plan = plan_rounds(fs.scan, fs.match(), {});
  return destination_extents(fs.scan, plan);
}

TEST(FreedSpace, AWholeFileDestinationFreesItsExtent) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  fs.add_file(4 * kSector, seq(1, 4));
  const auto extents = planned_extents(fs);
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_TRUE(extents[0].freed_by_plan);
  const auto f = predicted_freed(extents);
  EXPECT_EQ(f.bytes, 4 * kSector);
  EXPECT_EQ(f.extents, 1u);
}

// A file's last extent ends on a sector boundary past EOF; the range to EOF covers it.
TEST(FreedSpace, ARangeToAnUnalignedEofCoversTheLastExtent) {
  SyntheticFs fs;
  fs.add_file(3 * kSector - 100, seq(1, 3));
  fs.add_file(3 * kSector - 100, seq(1, 3));
  const auto f = predicted_freed(planned_extents(fs));
  EXPECT_EQ(f.bytes, 3 * kSector);
  EXPECT_EQ(f.extents, 1u);
}

// Sharing part of an extent leaves the rest referenced: the whole extent stays allocated.
TEST(FreedSpace, APartlySharedExtentIsNotFreed) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  auto b = seq(1, 2);
  b.push_back(90), b.push_back(91);
  fs.add_file(4 * kSector, b);
  const auto extents = planned_extents(fs);
  ASSERT_EQ(extents.size(), 1u);  // the destination's one extent, touched in part
  EXPECT_FALSE(extents[0].freed_by_plan);
  EXPECT_EQ(predicted_freed(extents).bytes, 0u);
}

// The layout two files reference is the source: the one file left over is moved whole.
TEST(FreedSpace, TheMostReferencedLayoutStaysAndTheOtherIsFreed) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  const auto b = fs.add_file(4 * kSector, seq(1, 4), {2, 2});  // two extents of 2 sectors
  fs.add_file(4 * kSector, seq(1, 4), {}, static_cast<int>(b));  // a reflink of b
  const auto f = predicted_freed(planned_extents(fs));
  EXPECT_EQ(f.bytes, 4 * kSector);  // file 0's one extent
  EXPECT_EQ(f.extents, 1u);
}

// A reference outside every destination range (here a small file reflinking part of the
// extent, too short to match) keeps the extent allocated; so do folded snapshot copies.
TEST(FreedSpace, ReferencesLeftKeepTheExtent) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  fs.add_file(4 * kSector, seq(1, 4), {2, 2});
  fs.add_file(4 * kSector, seq(1, 4), {}, 1);
  fs.add_file(4 * kSector, seq(1, 4), {}, 1);  // 3 references: this layout is the source
  const auto part = fs.add_file(2 * kSector, seq(1, 2), {}, 0);  // file 0's extent, in part
  for (auto& e : fs.scan.extents)
    if (e.file == part) e.length = 2 * kSector;
  sort_by_physical_identity(fs.scan.extents);
  const auto plan = plan_rounds(fs.scan, fs.match(4 * kSector), {});
  ASSERT_EQ(plan.planned_bytes, 4 * kSector);  // file 0 is still deduped
  EXPECT_EQ(predicted_freed(destination_extents(fs.scan, plan)).bytes, 0u);

  SyntheticFs held;
  held.add_file(4 * kSector, seq(7, 4));
  held.add_file(4 * kSector, seq(7, 4));
  held.scan.files[0].readonly_alias = true;  // snapshots hold both files' data: moving
  held.scan.files[1].readonly_alias = true;  // either one frees nothing
  EXPECT_EQ(predicted_freed(planned_extents(held)).bytes, 0u);
}

TEST(FreedSpace, FiguresAddUpBySubvolume) {
  FreedSpace a, b;
  a.bytes = 10, a.extents = 1, a.by_subvolume[256] = 10;
  b.bytes = 5, b.extents = 2, b.by_subvolume[256] = 2, b.by_subvolume[257] = 3;
  a.add(b);
  EXPECT_EQ(a.bytes, 15u);
  EXPECT_EQ(a.extents, 3u);
  EXPECT_EQ(a.by_subvolume[256], 12u);
  EXPECT_EQ(a.by_subvolume[257], 3u);
}

}  // namespace
}  // namespace btrdedupe

namespace btrdedupe {
namespace {

// A file written over part of its fallocated space: one extent named by a regular item
// and by a prealloc item. Sharing the data leaves the unwritten part referenced.
TEST(FreedSpace, AnExtentAPreallocItemAlsoNamesIsNotFreed) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  const auto b = fs.add_file(4 * kSector, seq(1, 4));
  for (const auto& e : fs.scan.extents)
    if (e.file == b) fs.scan.passed_over.prealloc_bytenrs.push_back(e.disk_bytenr);
  const auto extents = planned_extents(fs);
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_TRUE(extents[0].unwritten_refs);
  EXPECT_FALSE(extents[0].freed_by_plan);
  EXPECT_EQ(predicted_freed(extents).bytes, 0u);
}

}  // namespace
}  // namespace btrdedupe

namespace btrdedupe {
namespace {

PhysicalExtent extent_of(uint64_t bytenr, uint64_t disk_bytes, uint64_t subvolume) {
  PhysicalExtent e;
  e.bytenr = bytenr;
  e.disk_bytes = disk_bytes;
  e.subvolume = subvolume;
  return e;
}

// What the tree no longer holds, less what rewritten remainders took anew in that
// subvolume: never below zero, in a subvolume or in all.
TEST(FreedSpace, RewrittenBytesAreTakenFromTheirSubvolumesFreed) {
  const std::vector<PhysicalExtent> extents{extent_of(1 << 20, 40960, 256),
                                            extent_of(2 << 20, 8192, 257),
                                            extent_of(3 << 20, 4096, 256)};
  const std::vector<bool> allocated{false, false, true};
  const FreedSpace plain = freed_of(extents, allocated);
  EXPECT_EQ(plain.bytes, 40960u + 8192u);
  EXPECT_EQ(plain.extents, 2u);

  const FreedSpace f = freed_of(extents, allocated, {{256, 4096}, {257, 10000}, {258, 500}});
  EXPECT_EQ(f.extents, 2u);
  EXPECT_EQ(f.by_subvolume.at(256), 40960u - 4096u);
  EXPECT_EQ(f.by_subvolume.at(257), 0u);   // 10000 rewritten against 8192 freed
  EXPECT_EQ(f.by_subvolume.at(258), 0u);   // nothing freed there to take from
  EXPECT_EQ(f.bytes, 40960u + 8192u - 4096u - 8192u);
}

// The extent tree is searched through the fd: one not on btrfs has none.
TEST(FreedSpace, StillAllocatedNeedsAnFdOnBtrfs) {
  const test::RealFiles files;
  const auto fd = btrfs::Fd::open(files.dir, O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(fd) << fd.error().message();
  const auto answer = still_allocated(fd->get(), {extent_of(1 << 20, 4096, 5)}, 0);
  if (answer) GTEST_SKIP() << files.dir << " is on btrfs here";
  EXPECT_NE(answer.error().code, 0);
}

}  // namespace
}  // namespace btrdedupe
