// Matching on synthetic scans: no disk, sector sums stand for content.
#include "src/match/duplicate_match.h"

#include <gtest/gtest.h>

#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

TEST(DuplicateMatch, IdenticalFilesFormOneWholeFileGroup) {
  SyntheticFs fs;
  fs.add_file(5 * kSector - 100, seq(1, 5));
  fs.add_file(5 * kSector - 100, seq(1, 5));
  fs.add_file(5 * kSector - 100, seq(1, 5));
  fs.add_file(5 * kSector - 100, seq(100, 5));  // different content
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  const auto& g = r.groups[0];
  EXPECT_TRUE(g.whole_file);
  EXPECT_EQ(g.length, 5 * kSector - 100);
  EXPECT_EQ(g.members.size(), 3u);
  EXPECT_EQ(g.layouts(), 3u);
  EXPECT_EQ(r.candidate_bytes, 2 * (5 * kSector - 100));
}

TEST(DuplicateMatch, DifferentExtentLayoutsStillMatch) {
  SyntheticFs fs;
  fs.add_file(8 * kSector, seq(1, 8), {8});
  fs.add_file(8 * kSector, seq(1, 8), {3, 1, 4});
  const auto r = fs.match();
  ASSERT_EQ(r.whole_file_groups, 1u);
  EXPECT_EQ(r.groups[0].members[1].extents, 3u);
}

TEST(DuplicateMatch, AlreadySharedFilesAreNotProposed) {
  SyntheticFs fs;
  const auto a = fs.add_file(4 * kSector, seq(1, 4));
  fs.add_file(4 * kSector, seq(1, 4), {}, static_cast<int>(a));  // reflink of a
  const auto r = fs.match();
  EXPECT_TRUE(r.groups.empty());
  EXPECT_EQ(r.already_shared_files, 2u);
  EXPECT_EQ(r.candidate_bytes, 0u);
}

TEST(DuplicateMatch, ReflinkedPairPlusCopyNeedsOnlyTheCopy) {
  SyntheticFs fs;
  const auto a = fs.add_file(4 * kSector, seq(1, 4));
  fs.add_file(4 * kSector, seq(1, 4), {}, static_cast<int>(a));
  fs.add_file(4 * kSector, seq(1, 4));
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].layouts(), 2u);
  EXPECT_EQ(r.groups[0].members.size(), 3u);
}

TEST(DuplicateMatch, UnknownSectorsNeverMatchWholeFile) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  const auto b = fs.add_file(4 * kSector, seq(1, 4));
  fs.unknown(b, 2);
  const auto r = fs.match(2 * kSector, false);
  EXPECT_TRUE(r.groups.empty());
}

TEST(DuplicateMatch, NodatasumFilesOnlyMatchTheirKind) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(1, 4));
  const auto b = fs.add_file(4 * kSector, seq(1, 4));
  fs.scan.files[b].inode_flags = btrfs::kInodeNoDataSum;
  EXPECT_TRUE(fs.match().groups.empty());
}

TEST(DuplicateMatch, SharedRangeInsideDifferentFilesIsExtendedToItsLongestRun) {
  SyntheticFs fs;
  // a: [1..10]; b: [50 51 | 3 4 5 6 7 | 60 ...]: 5 equal sectors at different offsets?
  // Blocks are 2 sectors and must align: b holds a's sectors 2..7 at its sectors 2..7.
  std::vector<uint32_t> b_content = {50, 51, 3, 4, 5, 6, 7, 8, 60, 61};
  fs.add_file(10 * kSector, seq(1, 10));
  fs.add_file(10 * kSector, b_content);
  const auto r = fs.match();
  ASSERT_EQ(r.partial_groups, 1u);
  const auto& g = r.groups[0];
  EXPECT_FALSE(g.whole_file);
  EXPECT_EQ(g.length, 6 * kSector);
  EXPECT_EQ(g.members[0].offset, 2 * kSector);
  EXPECT_EQ(g.members[1].offset, 2 * kSector);
}

TEST(DuplicateMatch, RangeAtDifferentBlockOffsetsAndSectorTail) {
  SyntheticFs fs;
  // b repeats a's sectors 0..4 at its block 2 (sector 4), then differs.
  fs.add_file(6 * kSector, {1, 2, 3, 4, 5, 99});
  fs.add_file(10 * kSector, {70, 71, 72, 73, 1, 2, 3, 4, 5, 98});
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].members[0].offset, 0u);
  EXPECT_EQ(r.groups[0].members[1].offset, 4 * kSector);
  EXPECT_EQ(r.groups[0].length, 5 * kSector);  // 2 blocks, then one more equal sector
}

TEST(DuplicateMatch, PartialTailOnlyWhenBothEndAtEof) {
  SyntheticFs fs;
  // Same 3 sectors, both files end 100 bytes into the third: whole-file would take it, so
  // make the heads differ to force a range match ending at EOF of both.
  fs.add_file(7 * kSector - 100, {1, 2, 10, 11, 12, 13, 14});
  fs.add_file(7 * kSector - 100, {5, 6, 10, 11, 12, 13, 14});
  auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 5 * kSector - 100);

  SyntheticFs other;
  other.add_file(7 * kSector - 100, {1, 2, 10, 11, 12, 13, 14});
  other.add_file(8 * kSector, {5, 6, 10, 11, 12, 13, 14, 15});
  r = other.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 4 * kSector);  // the partial sector cannot be deduped
}

TEST(DuplicateMatch, OneFileWithItselfAtTwoOffsets) {
  SyntheticFs fs;
  fs.add_file(8 * kSector, {1, 2, 3, 4, 1, 2, 3, 4});
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  const auto& g = r.groups[0];
  EXPECT_EQ(g.members[0].file, g.members[1].file);
  EXPECT_EQ(g.members[0].offset, 0u);
  EXPECT_EQ(g.members[1].offset, 4 * kSector);
  EXPECT_EQ(g.length, 4 * kSector);  // never overlapping
}

TEST(DuplicateMatch, ManyCopiesOfOneBlockRangeShareOneSource) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, {1, 2, 3, 4});
  for (int i = 0; i < 5; ++i) fs.add_file(6 * kSector, {9, static_cast<uint32_t>(20 + i), 1, 2, 3, 4});
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].members.size(), 6u);
  EXPECT_EQ(r.groups[0].length, 4 * kSector);
}

TEST(DuplicateMatch, LargestGroupsComeFirst) {
  SyntheticFs fs;
  fs.add_file(2 * kSector, seq(1, 2));
  fs.add_file(2 * kSector, seq(1, 2));
  fs.add_file(6 * kSector, seq(10, 6));
  fs.add_file(6 * kSector, seq(10, 6));
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_GT(r.groups[0].length, r.groups[1].length);
}

// 0xffffffff: the crc32c every self-checksummed sector shares (is_crc32c_residue).
constexpr uint32_t kResidue = 0xffffffffu;

TEST(DuplicateMatch, Crc32cResidueSectorBreaksAPartialRun) {
  SyntheticFs fs;
  // Equal sums everywhere, but sector 3's equal sum proves nothing (ext4 backup
  // superblocks of different groups): no range may cover it.
  fs.add_file(8 * kSector, {1, 2, 3, kResidue, 5, 6, 7, 8});
  fs.add_file(10 * kSector, {1, 2, 3, kResidue, 5, 6, 7, 8, 9, 10});
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 2u);
  for (const auto& g : r.groups)
    for (const auto& m : g.members)
      EXPECT_TRUE(m.offset + g.length <= 3 * kSector || m.offset >= 4 * kSector)
          << m.offset << "+" << g.length;
  // The equal sectors around it are still matched: 3 before, 4 after.
  EXPECT_EQ(r.groups[0].length + r.groups[1].length, 7 * kSector);
}

TEST(DuplicateMatch, Crc32cResidueIsOrdinaryForOtherChecksums) {
  SyntheticFs fs;
  fs.scan.fs.csum_type = btrfs::CsumType::Xxhash64;  // 4-byte ids stand for its sums here
  fs.add_file(8 * kSector, {1, 2, 3, kResidue, 5, 6, 7, 8});
  fs.add_file(10 * kSector, {1, 2, 3, kResidue, 5, 6, 7, 8, 9, 10});
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 8 * kSector);
}

TEST(DuplicateMatch, WholeFileDuplicatesWithAResidueSectorStillMatch) {
  SyntheticFs fs;  // two copies of one disk image: the kernel's compare decides
  fs.add_file(4 * kSector, {1, kResidue, 3, 4});
  fs.add_file(4 * kSector, {1, kResidue, 3, 4});
  const auto r = fs.match();
  ASSERT_EQ(r.whole_file_groups, 1u);
}

}  // namespace
}  // namespace btrdedupe
