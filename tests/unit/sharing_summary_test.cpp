#include <gtest/gtest.h>

#include "src/tree_scan.h"

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

}  // namespace btrdedupe
