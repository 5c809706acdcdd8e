// Twins of compressed extents from the csum tree alone (src/fingerprint/compressed_twins.h):
// the same algorithm, on-disk length and compressed sums make twins; anything less does not.
#include "src/fingerprint/compressed_twins.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "tests/support/memory_tree_source.h"

namespace btrdedupe {
namespace {

constexpr uint64_t kSector = 4096;

struct Compressed {
  btrfs::Compression compression;
  std::vector<uint32_t> sums;  // of its on-disk sectors; 0: the tree has none for that one
  uint64_t sectors;            // decompressed
};

class CompressedTwinsTest : public ::testing::Test {
 protected:
  CompressedTwinsTest() {
    scan_.fs.sectorsize = kSector;
    scan_.fs.csum_size = 4;
    scan_.fs.nodesize = 16384;
  }

  // One physical extent per entry, 1 MiB apart on disk, in disk order.
  void add(const Compressed& c) {
    const uint64_t bytenr = (extents_.size() + 1) << 20;
    FileExtent e;
    e.file = static_cast<uint32_t>(extents_.size());
    e.length = c.sectors * kSector;
    e.disk_bytenr = bytenr;
    e.disk_num_bytes = c.sums.size() * kSector;
    e.compression = c.compression;
    scan_.extents.push_back(e);
    ExtentSums x;
    x.first_ref = extents_.size();
    x.end_ref = x.first_ref + 1;
    x.disk_bytenr = bytenr;
    x.sectors = c.sectors;
    x.compressed = c.compression != btrfs::Compression::None;
    extents_.push_back(x);
    for (size_t s = 0; s < c.sums.size(); ++s) {
      if (!c.sums[s]) continue;
      std::vector<uint8_t> sum(4);
      std::memcpy(sum.data(), &c.sums[s], 4);
      csums_.add(BTRFS_CSUM_TREE_OBJECTID,
                 {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr + s * kSector}, sum);
    }
  }

  std::vector<std::pair<size_t, size_t>> twins() {
    auto got = compressed_twins(csums_, scan_, extents_, nullptr);
    EXPECT_TRUE(got.ok()) << got.error().message();
    std::vector<std::pair<size_t, size_t>> out;
    if (got.ok())
      for (const auto& t : *got) out.emplace_back(t.twin, t.read);
    std::ranges::sort(out);
    return out;
  }

  ScanResult scan_;
  std::vector<ExtentSums> extents_;
  test::MemoryTreeSource csums_;
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
