// Holes are content: matching and planning of sparse files on synthetic scans.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>

#include "src/fingerprint/content_hash.h"
#include "src/plan/dedupe_plan.h"
#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

// data(first, n): n data sectors with content ids first..; hole(n): n hole sectors.
std::vector<uint32_t> data(uint32_t first, size_t n) { return seq(first, n); }
std::vector<uint32_t> hole(size_t n) { return std::vector<uint32_t>(n, kHole); }
std::vector<uint32_t> cat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// 16 data sectors, an 8-sector hole, 13 sectors of data whose last one is partial.
constexpr uint64_t kSparseSize = 37 * kSector - 1000;
std::vector<uint32_t> sparse_content() { return cat({data(1, 16), hole(8), data(100, 13)}); }

TEST(SparseMatch, IdenticalSparseFilesAreOneWholeFileGroup) {
  SyntheticFs fs;
  fs.add_sparse_file(kSparseSize, sparse_content());
  fs.add_sparse_file(kSparseSize, sparse_content());
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  const auto& g = r.groups[0];
  EXPECT_TRUE(g.whole_file);
  EXPECT_EQ(g.length, kSparseSize);
  EXPECT_EQ(g.members.size(), 2u);
  EXPECT_EQ(r.whole_file_groups, 1u);
  EXPECT_EQ(r.partial_groups, 0u);  // no range of them is matched again
  const std::vector<ByteRange> want{{0, 16 * kSector}, {24 * kSector, kSparseSize - 24 * kSector}};
  EXPECT_EQ(g.data, want);
  EXPECT_EQ(g.data_bytes(), kSparseSize - 8 * kSector);
  EXPECT_EQ(r.candidate_bytes, kSparseSize - 8 * kSector);  // holes are not dedupable bytes
}

TEST(SparseMatch, FilesWithoutHolesKeepAnEmptyDataList) {
  SyntheticFs fs;
  fs.add_sparse_file(4 * kSector, data(1, 4));
  fs.add_file(4 * kSector, data(1, 4), {1, 3});
  const auto r = fs.match();
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_TRUE(r.groups[0].data.empty());
  EXPECT_EQ(r.groups[0].data_bytes(), 4 * kSector);
}

TEST(SparseMatch, SameDataWithHolesElsewhereIsNotAWholeFileDuplicate) {
  SyntheticFs fs;
  const uint64_t size = 12 * kSector;
  fs.add_sparse_file(size, cat({data(1, 4), hole(4), data(10, 4)}));
  fs.add_sparse_file(size, cat({data(1, 4), hole(2), data(10, 4), hole(2)}));
  fs.add_sparse_file(size, cat({hole(4), data(1, 4), data(10, 4)}));
  fs.add_sparse_file(size, cat({data(1, 4), data(10, 4), hole(4)}));
  const auto r = fs.match();
  EXPECT_EQ(r.whole_file_groups, 0u);
  for (const auto& g : r.groups) EXPECT_FALSE(g.whole_file);
  EXPECT_GT(r.partial_groups, 0u);  // their equal data still matches as ranges
}

TEST(SparseMatch, HoleAgainstWrittenDataIsNotAWholeFileDuplicate) {
  SyntheticFs fs;
  fs.add_sparse_file(8 * kSector, cat({data(1, 4), hole(4)}));
  fs.add_file(8 * kSector, cat({data(1, 4), data(50, 4)}));  // zeros written: other sums
  const auto b = fs.add_file(8 * kSector, cat({data(1, 4), data(50, 4)}));
  fs.unknown(b, 5);  // an unreadable data sector is not a hole either
  EXPECT_EQ(fs.match().whole_file_groups, 0u);
}

TEST(SparseMatch, AnUnknownDataSectorKeepsSparseFilesApart) {
  SyntheticFs fs;
  fs.add_sparse_file(kSparseSize, sparse_content());
  const auto b = fs.add_sparse_file(kSparseSize, sparse_content());
  fs.unknown(b, 30);
  EXPECT_EQ(fs.match(2 * kSector, false).whole_file_groups, 0u);
}

TEST(SparseMatch, AFileWithAnInlineExtentHasNoHoleMap) {
  SyntheticFs fs;
  fs.add_sparse_file(8 * kSector, cat({hole(1), data(1, 7)}));
  const auto b = fs.add_sparse_file(8 * kSector, cat({hole(1), data(1, 7)}));
  EXPECT_EQ(fs.match(2 * kSector, false).whole_file_groups, 1u);
  fs.scan.files[b].inline_data = true;  // its first sector is in the tree, not a hole
  EXPECT_EQ(fs.match(2 * kSector, false).whole_file_groups, 0u);
}

TEST(SparseMatch, SparseFilesSharingTheirDataAreAlreadyShared) {
  SyntheticFs fs;
  const auto a = fs.add_sparse_file(kSparseSize, sparse_content());
  fs.add_file(kSparseSize, sparse_content(), {}, static_cast<int>(a));  // a reflink
  for (size_t s = 16; s < 24; ++s) fs.unknown(1, s);  // its holes, as fingerprint leaves them
  const auto r = fs.match();
  EXPECT_TRUE(r.groups.empty());
  EXPECT_EQ(r.already_shared_files, 2u);
}

// Every round lies inside one data range, and together they cover the data exactly once.
TEST(SparsePlan, RoundsCoverOnlyTheDataRanges) {
  SyntheticFs fs;
  fs.add_sparse_file(kSparseSize, sparse_content());
  fs.add_sparse_file(kSparseSize, sparse_content());
  fs.add_sparse_file(kSparseSize, sparse_content());
  const auto m = fs.match();
  PlanOptions o;
  o.round_bytes = 5 * kSector;
  const auto plan = plan_rounds(fs.scan, m, o);
  const std::vector<ByteRange> ranges = m.groups.at(0).data;
  std::vector<uint64_t> covered(ranges.size(), 0);
  for (const auto& r : plan.rounds) {
    ASSERT_EQ(r.destinations.size(), 2u);
    auto in = std::find_if(ranges.begin(), ranges.end(), [&](const ByteRange& d) {
      return r.source.offset >= d.offset && r.source.offset + r.length <= d.offset + d.length;
    });
    ASSERT_NE(in, ranges.end()) << "round at " << r.source.offset << " touches a hole";
    covered[in - ranges.begin()] += r.length;
    for (const auto& d : r.destinations) EXPECT_EQ(d.offset, r.source.offset);
  }
  for (size_t i = 0; i < ranges.size(); ++i) EXPECT_EQ(covered[i], ranges[i].length);
  // 16 sectors in 4 rounds of 5 and 1; 13 sectors (to the unaligned EOF) in 3.
  EXPECT_EQ(plan.rounds.size(), 7u);
  EXPECT_EQ(plan.planned_bytes, 2 * (kSparseSize - 8 * kSector));
}

TEST(SparsePlan, ASparseFileStartingWithAHoleChoosesItsSourceByItsData) {
  SyntheticFs fs;
  const auto content = cat({hole(4), data(1, 4)});
  fs.add_sparse_file(8 * kSector, content);
  const auto b = fs.add_sparse_file(8 * kSector, content);
  fs.add_file(8 * kSector, content, {}, static_cast<int>(b));  // b's data is referenced twice
  for (size_t s = 0; s < 4; ++s) fs.unknown(2, s);
  const auto m = fs.match();
  ASSERT_EQ(m.groups.size(), 1u);
  EXPECT_EQ(m.groups[0].members[choose_target(fs.scan, m.groups[0])].file, b);
  const auto plan = plan_rounds(fs.scan, m, {});
  ASSERT_EQ(plan.rounds.size(), 1u);
  EXPECT_EQ(plan.rounds[0].source.offset, 4 * kSector);
  EXPECT_EQ(plan.rounds[0].length, 4 * kSector);
}

// A hashfile written before holes were content keeps its rows' meaning: a file without
// holes hashes exactly as format 2 always did.
TEST(SparseHash, AFileWithoutHolesHashesAsFormatTwoDid) {
  SyntheticFs fs;
  const uint64_t size = 3 * kSector - 7;
  const auto f = fs.add_file(size, data(5, 3));
  const FileExtentIndex index(fs.scan);
  const auto sums = fs.fp.files[f].sums;
  const uint64_t format2 =
      XXH3_64bits_withSeed(sums.data(), sums.size(), 0) ^ (size * 0x9E3779B97F4A7C15ULL);
  EXPECT_EQ(whole_file_hash(fs.scan, index, fs.fp.files[f], f), format2);
}

TEST(SparseHash, TheHoleMapIsPartOfTheHash) {
  SyntheticFs fs;
  const auto a = fs.add_sparse_file(8 * kSector, cat({data(1, 4), hole(4)}));
  const auto b = fs.add_sparse_file(8 * kSector, cat({hole(4), data(1, 4)}));
  const auto c = fs.add_sparse_file(8 * kSector, cat({data(1, 4), hole(4)}));
  const auto d = fs.add_sparse_file(8 * kSector, hole(8));
  const FileExtentIndex index(fs.scan);
  auto hash = [&](uint32_t f) { return whole_file_hash(fs.scan, index, fs.fp.files[f], f); };
  ASSERT_TRUE(hash(a) && hash(b));
  EXPECT_NE(*hash(a), *hash(b));
  EXPECT_EQ(hash(a), hash(c));
  EXPECT_FALSE(hash(d));  // no data: nothing to dedupe, no hash
}

}  // namespace
}  // namespace btrdedupe
