#include <gtest/gtest.h>

#include "src/read/tree_scan.h"

namespace btrdedupe {

FileExtent ext(uint64_t bytenr, uint64_t offset, uint64_t length) {
  FileExtent e;
  e.disk_bytenr = bytenr;
  e.extent_offset = offset;
  e.length = length;
  return e;
}

TEST(SharingSummary, CountsOverlappingReferencesOnce) {
  // Extent A referenced whole twice (a reflink) and once partly; extent B once.
  std::vector<FileExtent> v = {ext(1000, 0, 100), ext(1000, 0, 100), ext(1000, 50, 20),
                               ext(5000, 0, 40)};
  const auto s = summarize_sharing(v);
  EXPECT_EQ(s.logical_bytes, 260u);
  EXPECT_EQ(s.unique_bytes, 140u);
  EXPECT_EQ(s.shared_bytes, 120u);
  EXPECT_EQ(s.physical_extents, 2u);
}

TEST(SharingSummary, DisjointRangesOfOneExtentAreNotShared) {
  std::vector<FileExtent> v = {ext(1000, 0, 30), ext(1000, 30, 30), ext(1000, 100, 10)};
  const auto s = summarize_sharing(v);
  EXPECT_EQ(s.unique_bytes, 70u);
  EXPECT_EQ(s.shared_bytes, 0u);
}

// A window of a windowed run: its earlier twins' extents were counted in their own window.
// Data they reference is neither logical nor unique here; the window's other data is.
TEST(SharingSummary, DataCountedBeforeIsLeftOut) {
  std::vector<FileExtent> v = {ext(1000, 0, 100), ext(1000, 0, 100), ext(5000, 0, 40),
                               ext(5000, 0, 40), ext(9000, 0, 8)};
  v[0].file = 0;  // an earlier window's file
  v[1].file = 1;  // this window's reflink of it
  v[2].file = 2;  // two files of this window sharing one extent
  v[3].file = 3;
  v[4].file = 4;
  BatchRoles earlier = BatchRoles::window(5);
  earlier.set(0, BatchRole::EarlierTwin);
  const auto s = summarize_sharing(v, nullptr, earlier);
  EXPECT_EQ(s.logical_bytes, 100u + 40 + 40 + 8);
  EXPECT_EQ(s.unique_bytes, 40u + 8);
  EXPECT_EQ(s.shared_bytes, 100u + 40);
  EXPECT_EQ(s.physical_extents, 2u);
  const BatchRoles none = BatchRoles::window(5);  // nothing earlier: as without the roles
  const auto all = summarize_sharing(v, nullptr, none);
  const auto plain = summarize_sharing(v);
  EXPECT_EQ(all.logical_bytes, plain.logical_bytes);
  EXPECT_EQ(all.unique_bytes, plain.unique_bytes);
  EXPECT_EQ(all.physical_extents, plain.physical_extents);
}

// duperemove's figure: every file extent whose physical extent has another reference
// counts whole, in every file; one reference alone counts nothing, unless folded read-only
// snapshot copies hold it too.
TEST(SharingSummary, BytesInSharedExtentsCountEveryReference) {
  std::vector<FileExtent> v = {ext(1000, 0, 100), ext(1000, 0, 100), ext(5000, 0, 40),
                               ext(9000, 0, 8)};
  for (uint32_t i = 0; i < v.size(); ++i) v[i].file = i;
  EXPECT_EQ(summarize_sharing(v).in_shared_extents, 200u);  // a deduped pair counts twice
  std::vector<ScannedFile> files(4);
  files[3].readonly_alias = true;
  EXPECT_EQ(summarize_sharing(v, &files).in_shared_extents, 208u);
  // Earlier windows' twins count too: a window's after minus before is what it shared.
  BatchRoles earlier = BatchRoles::window(4);
  earlier.set(0, BatchRole::EarlierGroupedTwin);
  EXPECT_EQ(summarize_sharing(v, nullptr, earlier).in_shared_extents, 200u);
}

// A window's own file that an earlier window took as its ahead twin (Settled) was counted
// there: here it is as if absent, so the extent it shares with this window's file is that
// file's alone. Ahead twins and candidates count as the batch's own.
TEST(SharingSummary, SettledFilesAreLeftOutAndAheadTwinsCountAsOwn) {
  std::vector<FileExtent> v = {ext(1000, 0, 100), ext(1000, 0, 100), ext(5000, 0, 40)};
  for (uint32_t i = 0; i < v.size(); ++i) v[i].file = i;
  BatchRoles roles = BatchRoles::window(3);
  roles.set(0, BatchRole::Settled);
  const auto s = summarize_sharing(v, nullptr, roles);
  EXPECT_EQ(s.logical_bytes, 140u);
  EXPECT_EQ(s.unique_bytes, 140u);
  EXPECT_EQ(s.shared_bytes, 0u);
  EXPECT_EQ(s.in_shared_extents, 0u);
  roles.set(0, BatchRole::AheadTwin);
  roles.set(2, BatchRole::Candidate);
  const auto own = summarize_sharing(v, nullptr, roles), plain = summarize_sharing(v);
  EXPECT_EQ(own.logical_bytes, plain.logical_bytes);
  EXPECT_EQ(own.unique_bytes, plain.unique_bytes);
  EXPECT_EQ(own.in_shared_extents, plain.in_shared_extents);
}

}  // namespace btrdedupe
