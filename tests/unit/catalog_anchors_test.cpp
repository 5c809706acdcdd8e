// What the catalog indexes for partial matches (catalog_anchors, src/fingerprint/content_hash.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "src/fingerprint/content_hash.h"
#include "unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

std::vector<uint64_t> anchors_of(const SyntheticFs& fs, uint32_t f, uint64_t min_run) {
  return catalog_anchors(fs.fp.files[f], fs.scan.files[f].size, kSector, 4, min_run, false, false);
}

bool share_one(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  return std::ranges::any_of(a, [&](uint64_t h) { return std::ranges::binary_search(b, h); });
}

TEST(CatalogAnchors, ACopyAtAnyOffsetSharesAnAnchor) {
  SyntheticFs fs;
  const auto a = fs.add_file(64 * kSector, seq(1, 64));
  // a's sectors 10..41 (32 sectors, the minimum run) after 7 sectors of other content.
  auto content = seq(500, 7);
  for (uint32_t v : seq(11, 32)) content.push_back(v);
  const auto b = fs.add_file(content.size() * kSector, content);
  const auto other = fs.add_file(64 * kSector, seq(1000, 64));
  const auto ka = anchors_of(fs, a, 32 * kSector), kb = anchors_of(fs, b, 32 * kSector);
  ASSERT_FALSE(ka.empty());
  EXPECT_TRUE(std::ranges::is_sorted(ka));
  EXPECT_TRUE(share_one(ka, kb));
  EXPECT_FALSE(share_one(ka, anchors_of(fs, other, 32 * kSector)));
  // About 2/(w+1) of the positions: far fewer rows than sectors.
  EXPECT_LE(ka.size(), 16u);
}

TEST(CatalogAnchors, NoRowsUnderTheMinimumAndOneForAConstantRun) {
  SyntheticFs fs;
  const auto small = fs.add_file(31 * kSector, seq(1, 31));
  EXPECT_TRUE(anchors_of(fs, small, 32 * kSector).empty());
  const auto zeros = fs.add_file(256 * kSector, std::vector<uint32_t>(256, 7));
  EXPECT_EQ(anchors_of(fs, zeros, 32 * kSector).size(), 1u);
}

}  // namespace
}  // namespace btrdedupe
