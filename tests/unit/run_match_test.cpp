// Alignment-free partial matching on synthetic scans (issue #16): equal runs at any
// sector offsets, extended both ways, never on less than 64 bits of sums.
#include <gtest/gtest.h>

#include <algorithm>

#include "src/fingerprint/short_file_proof.h"
#include "src/fingerprint/sum_anchors.h"
#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

constexpr uint32_t kResidue = 0xffffffffu;  // is_crc32c_residue

std::vector<uint32_t> cat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Content ids that look random (no two equal), as real data's sums do.
std::vector<uint32_t> noise(uint32_t seed, size_t n) {
  std::vector<uint32_t> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (auto& s : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    s = static_cast<uint32_t>(x >> 33) | 1u;  // never 0, never the residue
    if (s == kResidue) s = 7;
  }
  return v;
}

class RunMatch : public ::testing::Test {
 protected:
  uint32_t add(uint64_t size, std::vector<uint32_t> content) {
    contents_.push_back(content);
    return fs_.add_file(size, content);
  }
  // Every group's members hold the same content ids over the group's sectors, and no two
  // members in one file overlap.
  void expect_sound(const MatchResult& r) {
    for (const auto& g : r.groups) {
      const uint64_t n = (g.length + kSector - 1) / kSector;
      const auto& first = g.members.front();
      for (const auto& m : g.members) {
        ASSERT_EQ(m.offset % kSector, 0u);
        for (uint64_t i = 0; i < n; ++i)
          ASSERT_EQ(id(m.file, m.offset / kSector + i), id(first.file, first.offset / kSector + i))
              << "file " << m.file << " sector " << m.offset / kSector + i;
        for (const auto& o : g.members) {
          if (&o == &m || o.file != m.file) continue;
          EXPECT_TRUE(o.offset + g.length <= m.offset || m.offset + g.length <= o.offset);
        }
      }
    }
  }
  // Sectors of `file` covered as a destination (a member after the first), each at most once.
  uint64_t destination_sectors(const MatchResult& r, uint32_t file) {
    std::vector<int> cover(contents_[file].size(), 0);
    for (const auto& g : r.groups)
      for (size_t i = 1; i < g.members.size(); ++i)
        if (g.members[i].file == file)
          for (uint64_t s = g.members[i].offset / kSector;
               s < (g.members[i].offset + g.length + kSector - 1) / kSector; ++s)
            ++cover[s];
    EXPECT_LE(*std::max_element(cover.begin(), cover.end()), 1) << "overlapping ranges";
    return static_cast<uint64_t>(std::count(cover.begin(), cover.end(), 1));
  }
  uint32_t id(uint32_t file, uint64_t sector) { return contents_.at(file).at(sector); }

  SyntheticFs fs_;
  std::vector<std::vector<uint32_t>> contents_;
};

TEST_F(RunMatch, ShiftedByAnOddNumberOfSectors) {
  const auto data = noise(1, 200);
  const auto a = add(200 * kSector - 100, data);
  const auto b = add(203 * kSector - 100, cat({noise(2, 3), data}));
  const auto r = fs_.match(32 * kSector);
  ASSERT_EQ(r.groups.size(), 1u);
  const auto& g = r.groups[0];
  EXPECT_EQ(g.length, 200 * kSector - 100);  // to EOF of both, partial last sector included
  EXPECT_EQ(g.members[0].file, a);
  EXPECT_EQ(g.members[0].offset, 0u);
  EXPECT_EQ(g.members[1].file, b);
  EXPECT_EQ(g.members[1].offset, 3 * kSector);
  expect_sound(r);
}

TEST_F(RunMatch, SameBlocksInAnotherOrder) {
  std::vector<std::vector<uint32_t>> piece;
  for (uint32_t i = 0; i < 8; ++i) piece.push_back(noise(10 + i, 16));
  const auto a = add(128 * kSector, cat({piece[0], piece[1], piece[2], piece[3], piece[4],
                                         piece[5], piece[6], piece[7]}));
  const auto b = add(128 * kSector, cat({piece[5], piece[2], piece[7], piece[0], piece[3],
                                         piece[6], piece[1], piece[4]}));
  const auto r = fs_.match(16 * kSector);
  EXPECT_EQ(r.partial_groups, 8u);
  expect_sound(r);
  EXPECT_EQ(destination_sectors(r, b), 128u);  // every sector of b, each once
  for (const auto& g : r.groups) EXPECT_EQ(g.members[0].file, a);
}

TEST_F(RunMatch, EqualTailAfterDistinctHeadIsExtendedBackToItsFirstSector) {
  // 64 KiB heads that differ, then the same 4 MiB: the run starts at 64 KiB in both, not at
  // the next multiple of -b.
  const auto tail = noise(3, 1024);
  add(1040 * kSector, cat({noise(4, 16), tail}));
  add(1040 * kSector, cat({noise(5, 16), tail}));
  const auto r = fs_.match(32 * kSector);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].members[0].offset, 16 * kSector);
  EXPECT_EQ(r.groups[0].members[1].offset, 16 * kSector);
  EXPECT_EQ(r.groups[0].length, 1024 * kSector);
}

TEST_F(RunMatch, UnalignedEqualTailEndingAtEof) {
  const auto tail = noise(6, 20);
  add(25 * kSector - 777, cat({noise(7, 5), tail}));
  add(29 * kSector - 777, cat({noise(8, 9), tail}));
  const auto r = fs_.match(8 * kSector);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 20 * kSector - 777);
  EXPECT_EQ(r.groups[0].members[0].offset, 5 * kSector);
  EXPECT_EQ(r.groups[0].members[1].offset, 9 * kSector);
}

TEST_F(RunMatch, ARunShorterThanTheMinimumIsNotProposed) {
  const auto run = noise(9, 8);
  add(20 * kSector, cat({noise(10, 5), run, noise(11, 7)}));
  add(20 * kSector, cat({noise(12, 11), run, noise(13, 1)}));
  EXPECT_TRUE(fs_.match(9 * kSector).groups.empty());
  const auto r = fs_.match(8 * kSector);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 8 * kSector);
}

TEST_F(RunMatch, OneCrc32cSectorOfAgreementIsNeverACandidate) {
  // -b 4K asks for single sectors; a 32-bit sum is no evidence: runs need two.
  add(4 * kSector, {1, 2, 3, 4});
  add(4 * kSector, {9, 2, 8, 7});
  EXPECT_TRUE(fs_.match(kSector).groups.empty());
  add(4 * kSector, {6, 2, 3, 7});  // a's sectors 1 and 2
  const auto r = fs_.match(kSector);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 2 * kSector);
  EXPECT_EQ(r.groups[0].members[0].offset, kSector);
}

// Their sums only list them; the groups come from their bytes (prove_short_files).
TEST_F(RunMatch, OneCrc32cSectorFilesAreCandidatesNotGroups) {
  const auto a = add(3000, {42});
  const auto b = add(3000, {42});
  add(3000, {41});
  add(2 * kSector - 5, {43, 44});
  add(2 * kSector - 5, {43, 44});
  auto r = fs_.match(kSector);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].length, 2 * kSector - 5);
  EXPECT_EQ(r.short_sum_files, 2u);
  ASSERT_EQ(r.short_sum_candidates.size(), 1u);
  EXPECT_EQ(r.short_sum_candidates[0].files, (std::vector<uint32_t>{a, b}));
  EXPECT_EQ(r.short_sum_candidates[0].data, (ByteRange{0, 3000}));
  const uint64_t before = r.candidate_bytes;
  add_whole_file_groups(fs_.scan, fs_.fp, {{a, b}}, r);  // as if their bytes agreed
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.whole_file_groups, 2u);
  EXPECT_EQ(r.groups[1].length, 3000u);  // still largest first
  EXPECT_EQ(r.candidate_bytes, before + 3000);
}

// A file whose data hash a catalog row held (a twin proven by an earlier window or run)
// is not read again: these synthetic files cannot be opened at all.
TEST_F(RunMatch, KnownDataHashesProveShortFilesWithoutAReadAndReadOnesAreReturned) {
  const auto a = add(3000, {42});
  const auto b = add(3000, {42});
  const auto c = add(3000, {42});
  const auto d = add(3000, {42});
  auto r = fs_.match(kSector);
  ASSERT_EQ(r.short_sum_candidates.size(), 1u);
  fs_.fp.short_hashes = {{a, 7}, {b, 8}, {c, 7}};  // d: unknown, and unreadable here
  const auto proof = prove_short_files(fs_.scan, fs_.fp, r, 2);
  EXPECT_EQ(proof.counts.files_known, 3u);
  EXPECT_EQ(proof.counts.files_read, 0u);
  EXPECT_EQ(proof.counts.files_unreadable, 1u);
  EXPECT_TRUE(proof.hashes_read.empty());
  EXPECT_TRUE(r.short_sum_candidates.empty());
  ASSERT_EQ(r.groups.size(), 1u);
  ASSERT_EQ(r.groups[0].members.size(), 2u);
  EXPECT_EQ(r.groups[0].members[0].file, a);
  EXPECT_EQ(r.groups[0].members[1].file, c);
  EXPECT_EQ(r.groups[0].length, 3000u);
  (void)d;
}

TEST_F(RunMatch, OneSectorOfALongerSumIsEnough) {
  fs_.scan.fs.csum_type = btrfs::CsumType::Xxhash64;
  fs_.scan.fs.csum_size = 8;
  fs_.fp.files = FileSumsTable(8);
  // Ids fill the first half of each 8-byte sum; the rest stays zero.
  fs_.add_file(3000, {42});
  fs_.add_file(3000, {42});
  const auto r = fs_.match(kSector);
  EXPECT_EQ(r.whole_file_groups, 1u);
  EXPECT_EQ(r.short_sum_files, 0u);
}

TEST_F(RunMatch, ResidueSectorsAndHolesBreakRuns) {
  const auto x = noise(14, 10), y = noise(15, 10), z = noise(16, 10);
  add(32 * kSector, cat({x, {kResidue}, y, {kResidue}, z}));
  const auto b = add(33 * kSector, cat({{5}, x, {kResidue}, y, {kResidue}, z}));
  fs_.unknown(b, 6);  // a hole in b's copy of x
  const auto r = fs_.match(4 * kSector);
  expect_sound(r);
  for (const auto& g : r.groups)
    for (const auto& m : g.members)
      for (uint64_t s = m.offset / kSector; s < (m.offset + g.length) / kSector; ++s) {
        EXPECT_NE(id(m.file, s), kResidue) << "a range covers a residue sector";
        EXPECT_FALSE(m.file == b && s == 6) << "a range covers b's unknown sector";
      }
  // x is cut by the hole into 5 and 4 sectors, y and z stay whole.
  EXPECT_EQ(destination_sectors(r, b), 5u + 4u + 10u + 10u);
}

TEST_F(RunMatch, RangesInOneFileNeverOverlap) {
  const auto x = noise(17, 12);
  const auto f = add(60 * kSector, cat({x, x, x, x, x}));
  add(64 * kSector, std::vector<uint32_t>(64, 5));  // written zeros: one content, repeated
  const auto r = fs_.match(4 * kSector);
  ASSERT_FALSE(r.groups.empty());
  expect_sound(r);
  EXPECT_EQ(destination_sectors(r, f), 48u);  // all but the first copy
  EXPECT_GT(destination_sectors(r, 1), 32u);
}

TEST_F(RunMatch, WholeFileDuplicatesAreSourcesOnly) {
  const auto data = noise(18, 40);
  const auto a = add(40 * kSector, data);
  add(40 * kSector, data);
  const auto c = add(41 * kSector, cat({{77}, data}));
  const auto r = fs_.match(8 * kSector);
  EXPECT_EQ(r.whole_file_groups, 1u);
  ASSERT_EQ(r.partial_groups, 1u);
  for (const auto& g : r.groups) {
    if (g.whole_file) continue;
    ASSERT_EQ(g.members.size(), 2u);
    EXPECT_EQ(g.members[0].file, a);
    EXPECT_EQ(g.members[1].file, c);
    EXPECT_EQ(g.members[1].offset, kSector);
  }
}

TEST_F(RunMatch, NodatasumRunsOnlyMatchNodatasum) {
  const auto data = noise(19, 40);
  add(40 * kSector, data);
  const auto b = add(41 * kSector, cat({{77}, data}));
  fs_.scan.files[b].inode_flags = btrfs::kInodeNoDataSum;
  EXPECT_TRUE(fs_.match(8 * kSector).groups.empty());
}

// The index holds the anchors of distinct content, about 2/(w+1) of its sectors; a copy
// adds almost nothing.
TEST_F(RunMatch, TheIndexHoldsAboutTwoInWPlusOneSectors) {
  constexpr size_t kSectors = 1 << 16;
  const auto data = noise(20, kSectors);
  add(kSectors * kSector, data);
  const auto shape = anchor_shape(32 * kSector, kSector, 4);
  ASSERT_EQ(shape.k, 2u);
  ASSERT_EQ(shape.w, 31u);
  const auto alone = fs_.match(32 * kSector).anchor_index_entries;
  const double expected = 2.0 * kSectors / (shape.w + 1);  // 4096
  EXPECT_GT(alone, 0.9 * expected);
  EXPECT_LT(alone, 1.1 * expected);
  add((kSectors + 5) * kSector, cat({noise(21, 5), data}));
  const auto r = fs_.match(32 * kSector);
  EXPECT_LT(r.anchor_index_entries, alone + 8);
  EXPECT_LE(r.anchor_index_bytes, 2 * 16 * 8 * r.anchor_index_entries / 5 + 16 * 1024);
  ASSERT_EQ(r.partial_groups, 1u);
  EXPECT_EQ(r.groups[0].length, kSectors * kSector);
}

}  // namespace
}  // namespace btrdedupe
