// Twins of compressed extents from their on-disk sums (src/fingerprint/compressed_twins.h):
// the same algorithm, on-disk length and compressed sums make twins; anything less does not.
#include "src/fingerprint/compressed_twins.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>


namespace btrdedupe {
namespace {

struct Compressed {
  btrfs::Compression compression;
  std::vector<uint32_t> sums;  // of its on-disk sectors; 0: the tree has none for that one
  uint64_t sectors;            // decompressed
};

class CompressedTwinsTest : public ::testing::Test {
 protected:
  // One physical extent per entry, in disk order, with the sums the csum walk found.
  void add(const Compressed& c) {
    ExtentSums x;
    x.sectors = c.sectors;
    x.compressed = c.compression != btrfs::Compression::None;
    const size_t i = extents_.size();
    extents_.push_back(x);
    if (!x.compressed) return;
    const size_t key = keys_.add(i, c.compression, c.sums.size());
    for (size_t s = 0; s < c.sums.size(); ++s)
      if (c.sums[s]) keys_.take(key, s, reinterpret_cast<const uint8_t*>(&c.sums[s]), 1);
  }

  std::vector<std::pair<size_t, size_t>> twins() {
    std::vector<std::pair<size_t, size_t>> out;
    for (const auto& t : keys_.twins(extents_)) out.emplace_back(t.twin, t.read);
    std::ranges::sort(out);
    return out;
  }

  std::vector<ExtentSums> extents_;
  CompressedKeys keys_{4};
};

TEST_F(CompressedTwinsTest, SameAlgorithmLengthAndSumsMakeTwinsAndNothingLess) {
  using btrfs::Compression;
  add({Compression::Zstd, {1, 2}, 8});
  add({Compression::Zstd, {1, 2}, 8});   // twin of 0
  add({Compression::Zstd, {1, 3}, 8});   // other compressed bytes
  add({Compression::Lzo, {1, 2}, 8});    // other algorithm
  add({Compression::Zstd, {1, 0}, 8});   // a sector without its sum: cannot tell
  add({Compression::Zstd, {1, 2, 4}, 8});  // longer on disk
  add({Compression::Zstd, {1, 2}, 10});  // referenced further: the one read for 0 and 1
  add({Compression::None, {1, 2}, 2});   // plain: its sums are its data's
  EXPECT_EQ(twins(), (std::vector<std::pair<size_t, size_t>>{{0, 6}, {1, 6}}));
}

TEST_F(CompressedTwinsTest, AmongEqualsTheFirstOnDiskIsRead) {
  using btrfs::Compression;
  add({Compression::Zlib, {5, 6, 7}, 12});
  add({Compression::Zlib, {5, 6, 7}, 12});
  add({Compression::Zlib, {5, 6, 7}, 12});
  EXPECT_EQ(twins(), (std::vector<std::pair<size_t, size_t>>{{1, 0}, {2, 0}}));
}

TEST_F(CompressedTwinsTest, NoTwinsWithoutTwoCompressedExtents) {
  add({btrfs::Compression::Zstd, {1, 2}, 8});
  add({btrfs::Compression::None, {1, 2}, 2});
  EXPECT_TRUE(twins().empty());
}

}  // namespace
}  // namespace btrdedupe
