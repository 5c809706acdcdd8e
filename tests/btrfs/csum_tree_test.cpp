// read_sector_sums against sums computed here from the files' own bytes.
#include "btrfs/csum_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "btrfs/items.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tree_search_helpers.h"

namespace btrdedupe::test {
namespace {

// CRC-32C (Castagnoli), reflected polynomial 0x82F63B78, init ~0, final xor ~0.
uint32_t crc32c(std::span<const uint8_t> data) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = ~0u;
  for (uint8_t b : data) crc = table[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

// btrfs stores sums little-endian.
std::vector<uint8_t> le_bytes(uint64_t v, size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
  return out;
}

std::vector<uint8_t> span_bytes(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }

TEST(CsumSoftware, Crc32cKnownAnswer) {
  const std::string check = "123456789";
  EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(check.data()), check.size()}), 0xE3069283u);
}

class CsumTree : public BtrfsTest {
 protected:
  std::string q(const std::string& relative) { return shell_quote(path(relative)); }
  void commit() { sh("btrfs filesystem sync " + shell_quote(fs().mount_point())); }

  void SetUp() override {
    BtrfsTest::SetUp();
    if (!fs_) return;
    root_ = open_or_fail(fs().mount_point(), O_RDONLY | O_DIRECTORY);
    auto info = btrfs::read_fs_info(root_.get());
    ASSERT_TRUE(info.ok()) << info.error().message();
    info_ = *info;
  }

  // An open fd would keep the filesystem busy at unmount.
  void TearDown() override {
    root_.reset();
    BtrfsTest::TearDown();
  }

  std::vector<DecodedExtent> extents_of(const std::string& relative) {
    return file_extents(root_.get(), stat_of(path(relative)).st_ino);
  }

  btrfs::SectorSums sums(uint64_t disk_bytenr, uint64_t length) {
    auto s = btrfs::read_sector_sums(root_.get(), info_, disk_bytenr, length);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return s.ok() ? *s : btrfs::SectorSums{};
  }

  // Every sum in the csum tree, by sector bytenr: the reference for clipping checks.
  std::map<uint64_t, std::vector<uint8_t>> whole_csum_tree() {
    btrfs::SearchKey key;
    key.tree_id = BTRFS_CSUM_TREE_OBJECTID;
    key.min_objectid = key.max_objectid = BTRFS_EXTENT_CSUM_OBJECTID;
    key.min_type = key.max_type = BTRFS_EXTENT_CSUM_KEY;
    std::map<uint64_t, std::vector<uint8_t>> all;
    for (const auto& raw : search_all(root_.get(), key).items) {
      auto item = btrfs::decode_csum_item(raw.offset, raw.data, info_.csum_size);
      EXPECT_TRUE(item.ok()) << item.error().message();
      if (!item.ok()) continue;
      csum_items_.emplace_back(raw.offset, item->sectors());
      for (uint64_t i = 0; i < item->sectors(); ++i)
        all[raw.offset + i * info_.sectorsize] =
            span_bytes(item->sums.subspan(i * info_.csum_size, info_.csum_size));
    }
    return all;
  }

  // Checks one read against the whole tree, sector by sector.
  void expect_matches_tree(const std::map<uint64_t, std::vector<uint8_t>>& tree, uint64_t start,
                           uint64_t length) {
    SCOPED_TRACE("range at " + std::to_string(start) + " of " + std::to_string(length));
    const auto got = sums(start, length);
    ASSERT_EQ(got.sectors(), (length + info_.sectorsize - 1) / info_.sectorsize);
    for (size_t i = 0; i < got.sectors(); ++i) {
      const auto it = tree.find(start + i * info_.sectorsize);
      ASSERT_EQ(got.present[i], it != tree.end()) << "sector " << i;
      if (it != tree.end()) {
        EXPECT_EQ(span_bytes(got.sum(i)), it->second) << "sector " << i;
      } else {
        EXPECT_EQ(span_bytes(got.sum(i)), std::vector<uint8_t>(info_.csum_size, 0));
      }
    }
  }

  // The expected sum of each sector of a file written once: extents with offset 0, and the
  // tail sector zero-padded on disk.
  template <typename Hash>
  void expect_file_sums(const std::string& relative, Hash hash) {
    const std::string content = read_file(path(relative));
    const auto extents = extents_of(relative);
    ASSERT_FALSE(extents.empty());
    const uint32_t ss = info_.sectorsize;
    for (const auto& e : extents) {
      ASSERT_EQ(e.item.type, btrfs::FileExtentType::Regular);
      ASSERT_EQ(e.item.compression, btrfs::Compression::None);
      ASSERT_EQ(e.item.offset, 0u);
      const auto got = sums(e.item.disk_bytenr, e.item.disk_num_bytes);
      ASSERT_EQ(got.sectors(), e.item.disk_num_bytes / ss);
      EXPECT_TRUE(got.complete());
      for (size_t i = 0; i < got.sectors(); ++i) {
        std::vector<uint8_t> sector(ss, 0);
        const size_t at = e.file_offset + i * ss;
        if (at < content.size())
          std::memcpy(sector.data(), content.data() + at,
                      std::min<size_t>(ss, content.size() - at));
        ASSERT_EQ(span_bytes(got.sum(i)), hash(sector))
            << "sector " << i << " of extent at " << e.file_offset;
      }
    }
  }

  btrfs::Fd root_;
  btrfs::FsInfo info_;
  std::vector<std::pair<uint64_t, uint64_t>> csum_items_;  // (start, sectors), by whole_csum_tree
};

auto crc32c_le = [](const std::vector<uint8_t>& sector) { return le_bytes(crc32c(sector), 4); };

TEST_F(CsumTree, SumsEqualCrc32cOfTheFileBytes) {
  ASSERT_EQ(info_.csum_type, btrfs::CsumType::Crc32c);
  ASSERT_EQ(info_.csum_size, 4u);
  sh("head -c 1053576 /dev/urandom > " + q("f"));  // 1 MiB + 5000: a partial tail sector
  commit();
  expect_file_sums("f", crc32c_le);
}

TEST_F(CsumTree, ManyCsumItemsAndRangesClippedAtTheirEdges) {
  // A direct write gives few large extents; buffered writeback can scatter it into dozens.
  // The layout still varies (mkfs makes only an 8 MiB data chunk, so part of the data may
  // land there), so every check below is against the csum tree as it really is.
  sh("dd if=/dev/urandom of=" + q("big") +
     " bs=32M count=1 iflag=fullblock oflag=direct status=none");
  commit();
  expect_file_sums("big", crc32c_le);
  const auto tree = whole_csum_tree();
  const auto extents = extents_of("big");
  ASSERT_FALSE(extents.empty());
  const uint64_t ss = info_.sectorsize;
  // 8192 crc32c sums (32 KiB) need at least three items in 16 KiB leaves.
  ASSERT_GE(csum_items_.size(), 3u);
  const auto longest = *std::max_element(csum_items_.begin(), csum_items_.end(),
                                         [](auto& a, auto& b) { return a.second < b.second; });
  ASSERT_GE(longest.second, 1000u);

  // Item starts before the range and ends after it: clipped on both sides.
  expect_matches_tree(tree, longest.first + 37 * ss, 11 * ss);
  EXPECT_TRUE(sums(longest.first + 37 * ss, 11 * ss).complete());
  // Every item's first and last sectors, read across the item's edges.
  for (const auto& [item_start, item_sectors] : csum_items_) {
    expect_matches_tree(tree, item_start >= 3 * ss ? item_start - 3 * ss : 0, 10 * ss);
    expect_matches_tree(tree, item_start + (item_sectors - 1) * ss, 2 * ss);
    expect_matches_tree(tree, item_start + 5 * ss, 3 * ss + 1);  // rounded up to 4 sectors
  }
  // Items the kernel split at the leaf size follow each other without a gap: the read
  // across such a boundary is complete.
  for (size_t i = 0; i + 1 < csum_items_.size(); ++i) {
    if (csum_items_[i].first + csum_items_[i].second * ss != csum_items_[i + 1].first) continue;
    EXPECT_TRUE(sums(csum_items_[i + 1].first - 3 * ss, 10 * ss).complete());
  }
  for (const auto& e : extents)
    expect_matches_tree(tree, e.item.disk_bytenr, e.item.disk_num_bytes);

  // Past the end of the last item: free space has no sums.
  const uint64_t last = tree.rbegin()->first + ss;
  const auto tail = sums(last - 2 * ss, 6 * ss);
  ASSERT_EQ(tail.sectors(), 6u);
  EXPECT_TRUE(tail.present[0] && tail.present[1]);
  EXPECT_EQ(tail.missing(), 4u);
  expect_matches_tree(tree, last - 2 * ss, 6 * ss);
}

TEST_F(CsumTree, EdgeCasesOfTheRequest) {
  const auto empty = sums(1 << 20, 0);
  EXPECT_EQ(empty.sectors(), 0u);
  EXPECT_TRUE(empty.complete());
  auto unaligned = btrfs::read_sector_sums(root_.get(), info_, 4097, 4096);
  ASSERT_FALSE(unaligned.ok());
  EXPECT_EQ(unaligned.error().code, EINVAL);
  auto wraps = btrfs::read_sector_sums(root_.get(), info_, btrfs::kMaxU64 - 4095, 8192);
  ASSERT_FALSE(wraps.ok());
  EXPECT_EQ(wraps.error().code, EINVAL);
  btrfs::FsInfo no_geometry;
  EXPECT_FALSE(btrfs::read_sector_sums(root_.get(), no_geometry, 0, 4096).ok());
  // Nothing is ever written at logical 0 (the first MiB is reserved).
  const auto none = sums(0, 16 * 4096);
  EXPECT_EQ(none.missing(), 16u);
}

TEST_F(CsumTree, PreallocatedExtentHasNoSums) {
  sh("fallocate -l 262144 " + q("pre"));
  commit();
  const auto extents = extents_of("pre");
  ASSERT_EQ(extents.size(), 1u);
  ASSERT_TRUE(extents[0].item.is_prealloc());
  const auto got = sums(extents[0].item.disk_bytenr, extents[0].item.disk_num_bytes);
  EXPECT_EQ(got.sectors(), 64u);
  EXPECT_EQ(got.missing(), 64u);
}

class CsumTreeZstd : public CsumTree {
 protected:
  ImageOptions image_options() const override {
    ImageOptions options;
    options.mount_options = "compress-force=zstd";
    return options;
  }
};

TEST_F(CsumTreeZstd, CompressedExtentsAreSummedOverTheirDiskBytes) {
  sh("yes 'compressible sums' | head -c 1048576 > " + q("z"));
  commit();
  const auto extents = extents_of("z");
  ASSERT_FALSE(extents.empty());
  size_t compressed = 0;
  for (const auto& e : extents) {
    // Writeback under load can leave a one-page range uncompressed (nothing to save there).
    if (e.item.compression != btrfs::Compression::Zstd) continue;
    ++compressed;
    const auto got = sums(e.item.disk_bytenr, e.item.disk_num_bytes);
    EXPECT_EQ(got.sectors(), e.item.disk_num_bytes / info_.sectorsize);
    EXPECT_TRUE(got.complete());
    EXPECT_LT(got.sectors() * info_.sectorsize, e.item.num_bytes);  // fewer sums than data
  }
  EXPECT_GT(compressed, 0u);
}

class CsumTreeXxhash : public CsumTree {
 protected:
  ImageOptions image_options() const override {
    ImageOptions options;
    options.mkfs_args = {"--csum", "xxhash"};
    return options;
  }
};

TEST_F(CsumTreeXxhash, SumsEqualXxh64OfEachSector) {
  ASSERT_EQ(info_.csum_type, btrfs::CsumType::Xxhash64);
  ASSERT_EQ(info_.csum_size, 8u);
  sh("head -c 600000 /dev/urandom > " + q("x"));
  commit();
  expect_file_sums("x", [](const std::vector<uint8_t>& sector) {
    return le_bytes(XXH64(sector.data(), sector.size(), 0), 8);
  });
  const auto tree = whole_csum_tree();
  const auto extents = extents_of("x");
  ASSERT_FALSE(extents.empty());
  const uint64_t start = extents[0].item.disk_bytenr;
  expect_matches_tree(tree, start + 3 * info_.sectorsize, 20 * info_.sectorsize);
}

}  // namespace
}  // namespace btrdedupe::test
