// What a windowed run keeps of the twins its windows verified (src/run/verified_twins.h).
#include "src/run/verified_twins.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace btrdedupe {
namespace {

InodeState state_of(uint64_t inode, size_t extents, const std::string& name) {
  InodeState s;
  s.item.size = 1000003 * inode;
  s.item.flags = inode % 2 ? btrfs::kInodeNoDataSum : 0;
  s.item.mode = 0100644;
  s.item.mtime = {1700000000 + static_cast<int64_t>(inode), 999999999};
  s.parent = 256 + inode / 10;
  s.name = name;
  for (size_t i = 0; i < extents; ++i) {
    FileExtent e;
    e.compression = i % 2 ? btrfs::Compression::Zstd : btrfs::Compression::None;
    e.file_offset = i * 131072;
    e.length = 131072 - i;
    e.disk_bytenr = (uint64_t{1} << 40) + i * 4096;
    e.disk_num_bytes = 131072;
    e.extent_offset = i * 512;
    s.extents.push_back(e);
  }
  return s;
}

void expect_same(const InodeState& a, const InodeState& b) {
  EXPECT_EQ(a.item.size, b.item.size);
  EXPECT_EQ(a.item.flags, b.item.flags);
  EXPECT_EQ(a.item.mode, b.item.mode);
  EXPECT_EQ(a.item.mtime.sec, b.item.mtime.sec);
  EXPECT_EQ(a.item.mtime.nsec, b.item.mtime.nsec);
  EXPECT_EQ(a.parent, b.parent);
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.extents.size(), b.extents.size());
  for (size_t i = 0; i < a.extents.size(); ++i) {
    const auto &x = a.extents[i], &y = b.extents[i];
    EXPECT_EQ(x.compression, y.compression) << i;
    EXPECT_EQ(x.file_offset, y.file_offset) << i;
    EXPECT_EQ(x.length, y.length) << i;
    EXPECT_EQ(x.disk_bytenr, y.disk_bytenr) << i;
    EXPECT_EQ(x.disk_num_bytes, y.disk_num_bytes) << i;
    EXPECT_EQ(x.extent_offset, y.extent_offset) << i;
  }
  EXPECT_EQ(a.passed_over.inline_extents, b.passed_over.inline_extents);
  EXPECT_EQ(a.passed_over.hole_extents, b.passed_over.hole_extents);
  EXPECT_EQ(a.passed_over.hole_bytes, b.passed_over.hole_bytes);
  EXPECT_EQ(a.passed_over.prealloc_bytes, b.passed_over.prealloc_bytes);
  EXPECT_EQ(a.passed_over.readonly_aliases, b.passed_over.readonly_aliases);
  EXPECT_TRUE(same_layout(a, b));
}

TEST(VerifiedTwins, GivesBackWhatVerificationAndPlacementRead) {
  VerifiedTwins kept(1 << 20);
  InodeState holes = state_of(7, 3, std::string("not utf-8 \xff\x00 name", 17));
  holes.passed_over.hole_extents = 2;
  holes.passed_over.hole_bytes = 8192;
  holes.passed_over.inline_extents = 1;
  holes.passed_over.prealloc_bytes = uint64_t{1} << 62;
  holes.passed_over.readonly_aliases = 3;
  InodeState odd = state_of(8, 0, "");
  odd.item.mtime = {-5, 0};  // before 1970
  ASSERT_TRUE(kept.keep({5, 7}, holes));
  ASSERT_TRUE(kept.keep({5, 8}, odd));
  ASSERT_TRUE(kept.keep({6, 7}, state_of(9, 1, "other subvolume")));
  EXPECT_EQ(kept.files(), 3u);
  auto a = kept.find({5, 7});
  ASSERT_TRUE(a);
  expect_same(*a, holes);
  auto b = kept.find({5, 8});
  ASSERT_TRUE(b);
  expect_same(*b, odd);
  auto c = kept.find({6, 7});
  ASSERT_TRUE(c);
  expect_same(*c, state_of(9, 1, "other subvolume"));
  EXPECT_FALSE(kept.find({5, 9}));
  EXPECT_FALSE(kept.contains({7, 7}));
  EXPECT_TRUE(kept.contains({5, 8}));
}

TEST(VerifiedTwins, StaysUnderItsBudgetAndKeepsNothingPastIt) {
  constexpr size_t kBudget = 256 << 10;
  VerifiedTwins kept(kBudget);
  uint64_t inode = 1;
  for (; kept.keep({5, inode}, state_of(inode, 2, "file" + std::to_string(inode))); ++inode)
    ASSERT_LE(kept.bytes(), kBudget);
  EXPECT_LE(kept.bytes(), kBudget);
  // Filled to within a block of its budget, at well under 100 bytes a file of two extents.
  EXPECT_GT(kept.bytes(), kBudget - (64 << 10));
  EXPECT_GT(kept.files(), 2000u);
  EXPECT_FALSE(kept.contains({5, inode}));
  EXPECT_FALSE(kept.find({5, inode}));
  expect_same(*kept.find({5, inode - 1}), state_of(inode - 1, 2, "file" + std::to_string(inode - 1)));
  // A state larger than a block is never kept, whatever the budget.
  VerifiedTwins large(64 << 20);
  EXPECT_FALSE(large.keep({5, 1}, state_of(1, 5000, "many extents")));
  EXPECT_TRUE(large.keep({5, 2}, state_of(2, 50, "some extents")));
  EXPECT_FALSE(large.contains({5, 1}));
  VerifiedTwins none(0);
  EXPECT_FALSE(none.keep({5, 1}, state_of(1, 1, "a")));
  EXPECT_EQ(none.bytes(), 0u);
}

// A table of one file of `sectors` sectors: sums counting up from `seed`, every third
// sector unknown (a hole), csum_size bytes a sum.
FileSumsTable sums_of(uint64_t sectors, uint8_t seed, uint16_t csum_size = 4) {
  FileSumsTable t(csum_size);
  t.add(sectors);
  auto sums = t.sums(0);
  for (size_t i = 0; i < sums.size(); ++i) sums[i] = static_cast<uint8_t>(seed + i);
  auto known = t.known(0);
  for (size_t i = 0; i < known.size(); ++i) known[i] = i % 3 != 2;
  return t;
}

void expect_same_sums(FileSumsView a, FileSumsView b) {
  EXPECT_EQ(std::vector<uint8_t>(a.sums.begin(), a.sums.end()),
            std::vector<uint8_t>(b.sums.begin(), b.sums.end()));
  EXPECT_EQ(std::vector<uint8_t>(a.known.begin(), a.known.end()),
            std::vector<uint8_t>(b.known.begin(), b.known.end()));
}

TEST(VerifiedTwins, GivesBackTheSumsOfAKeptTwinByteForByte) {
  VerifiedTwins kept(1 << 20);
  const auto four = sums_of(300, 7), wide = sums_of(5, 200, 32), none = sums_of(0, 0);
  EXPECT_FALSE(kept.keep_sums({5, 1}, four[0]));  // no state kept for it: no sums either
  ASSERT_TRUE(kept.keep({5, 1}, state_of(1, 2, "a")));
  ASSERT_TRUE(kept.keep({5, 2}, state_of(2, 1, "b")));
  ASSERT_TRUE(kept.keep({6, 1}, state_of(1, 0, "empty")));
  EXPECT_FALSE(kept.find_sums({5, 1}));
  ASSERT_TRUE(kept.keep_sums({5, 1}, four[0]));
  ASSERT_TRUE(kept.keep_sums({5, 2}, wide[0]));
  ASSERT_TRUE(kept.keep_sums({6, 1}, none[0]));
  EXPECT_EQ(kept.files_with_sums(), 3u);
  // Views stay valid as more is kept (blocks never move).
  const auto first = kept.find_sums({5, 1});
  for (uint64_t inode = 10; inode < 200; ++inode) {
    ASSERT_TRUE(kept.keep({5, inode}, state_of(inode, 1, "more")));
    ASSERT_TRUE(kept.keep_sums({5, inode}, sums_of(inode, static_cast<uint8_t>(inode))[0]));
  }
  ASSERT_TRUE(first);
  expect_same_sums(*first, four[0]);
  expect_same_sums(*kept.find_sums({5, 2}), wide[0]);
  EXPECT_EQ(kept.find_sums({5, 2})->sectors(), 5u);
  EXPECT_EQ(kept.find_sums({6, 1})->sectors(), 0u);
  expect_same_sums(*kept.find_sums({5, 150}), sums_of(150, 150)[0]);
  // The state is unchanged by its sums.
  expect_same(*kept.find({5, 1}), state_of(1, 2, "a"));
}

TEST(VerifiedTwins, KeepsNoSumsPastItsBudgetOrABlock) {
  constexpr size_t kBudget = 256 << 10;
  VerifiedTwins kept(kBudget);
  ASSERT_TRUE(kept.keep({5, 1}, state_of(1, 1, "large")));
  // 13,200 sectors' 4-byte sums and flags take more than a 64 KiB block.
  EXPECT_FALSE(kept.keep_sums({5, 1}, sums_of(13200, 1)[0]));
  EXPECT_FALSE(kept.find_sums({5, 1}));
  EXPECT_TRUE(kept.keep_sums({5, 1}, sums_of(13000, 1)[0]));
  uint64_t inode = 2;
  for (; kept.keep({5, inode}, state_of(inode, 1, "f")) &&
         kept.keep_sums({5, inode}, sums_of(1000, 3)[0]);
       ++inode)
    ASSERT_LE(kept.bytes(), kBudget);
  EXPECT_LE(kept.bytes(), kBudget);
  EXPECT_GT(kept.bytes(), kBudget - (64 << 10));
  EXPECT_FALSE(kept.find_sums({5, inode}));
  expect_same_sums(*kept.find_sums({5, inode - 1}), sums_of(1000, 3)[0]);
}

}  // namespace
}  // namespace btrdedupe
