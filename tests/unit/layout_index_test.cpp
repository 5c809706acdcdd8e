// Folding read-only snapshot copies by the layout of their data (src/read/layout_index.h),
// over scan results built by hand: the files a subvolume's read appended, then the index's add.
#include "src/read/layout_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace btrdedupe {
namespace {

constexpr uint64_t kPlain = 256, kSnapshot = 257;

struct Piece {
  uint64_t file_offset, length, bytenr, extent_offset;
};

// Appends a file of `subvolume` with its extents, as a subvolume's read appends them.
uint32_t append(ScanResult& out, uint64_t subvolume, uint64_t inode, uint64_t size,
                const std::vector<Piece>& pieces, uint64_t flags = 0) {
  ScannedFile f;
  f.subvolume = subvolume;
  f.inode = inode;
  f.size = size;
  f.inode_flags = flags;
  const auto index = static_cast<uint32_t>(out.files.size());
  out.files.push_back(f);
  for (const Piece& p : pieces) {
    FileExtent e;
    e.file = index;
    e.file_offset = p.file_offset;
    e.length = p.length;
    e.disk_bytenr = p.bytenr;
    e.disk_num_bytes = p.extent_offset + p.length;
    e.extent_offset = p.extent_offset;
    out.extents.push_back(e);
  }
  return index;
}

const std::vector<Piece> kTwoPieces{{0, 8192, 1 << 20, 0}, {8192, 4096, 2 << 20, 4096}};
const std::vector<Piece> kOnePiece{{0, 4096, 3 << 20, 0}};

// The inodes of the files kept, in order.
std::vector<uint64_t> inodes(const ScanResult& out) {
  std::vector<uint64_t> v;
  for (const auto& f : out.files) v.push_back(f.inode);
  return v;
}

// The files the extents belong to, by inode, in order.
std::vector<uint64_t> extent_owners(const ScanResult& out) {
  std::vector<uint64_t> v;
  for (const auto& e : out.extents) v.push_back(out.files.at(e.file).inode);
  return v;
}

TEST(LayoutIndex, WithoutFoldingEveryFileIsKeptAndItsLayoutFound) {
  ScanResult out;
  LayoutIndex index;
  append(out, kPlain, 10, 12288, kTwoPieces);
  append(out, kPlain, 11, 4096, kOnePiece);
  append(out, kPlain, 12, 100, {});  // inline or empty: no regular extent
  const auto before = out.extents;
  index.add(out, 0, 0, false);

  EXPECT_EQ(inodes(out), (std::vector<uint64_t>{10, 11, 12}));
  EXPECT_EQ(out.extents.size(), before.size());
  EXPECT_EQ(out.passed_over.readonly_aliases, 0u);
  const FileExtent* e = out.extents.data();
  EXPECT_EQ(index.find(12288, 0, e, e + 2), std::optional<uint32_t>(0));
  EXPECT_EQ(index.find(4096, 0, e + 2, e + 3), std::optional<uint32_t>(1));
  // The same extents with another size, or without data sums, are another layout.
  EXPECT_FALSE(index.find(12289, 0, e, e + 2));
  EXPECT_FALSE(index.find(12288, btrfs::kInodeNoDataSum, e, e + 2));
  // Only the first of the two extents: not the file's layout.
  EXPECT_FALSE(index.find(12288, 0, e, e + 1));
  // A file without extents is never registered: nothing to fold it into.
  EXPECT_FALSE(index.find(100, 0, e, e));
}

TEST(LayoutIndex, FlagsOtherThanNoDataSumDoNotChangeTheLayout) {
  ScanResult out;
  LayoutIndex index;
  append(out, kPlain, 10, 4096, kOnePiece, btrfs::kInodeNoDataSum);
  index.add(out, 0, 0, false);
  const FileExtent* e = out.extents.data();
  EXPECT_EQ(index.find(4096, btrfs::kInodeNoDataSum | 0x10, e, e + 1), std::optional<uint32_t>(0));
  EXPECT_FALSE(index.find(4096, 0x10, e, e + 1));
}

TEST(LayoutIndex, ASnapshotsCopiesFoldIntoTheFilesAlreadyScanned) {
  ScanResult out;
  LayoutIndex index;
  append(out, kPlain, 10, 12288, kTwoPieces);
  append(out, kPlain, 11, 4096, kOnePiece);
  index.add(out, 0, 0, false);

  const size_t first_file = out.files.size(), first_extent = out.extents.size();
  append(out, kSnapshot, 10, 12288, kTwoPieces);                      // a copy of 10
  append(out, kSnapshot, 20, 4096, {{0, 4096, 9 << 20, 0}});         // its own data
  append(out, kSnapshot, 21, 0, {});                                  // no extent at all
  append(out, kSnapshot, 11, 4096, kOnePiece, btrfs::kInodeNoDataSum);  // 11's data, no sums
  append(out, kSnapshot, 22, 4096, kOnePiece);                        // a copy of 11
  index.add(out, first_file, first_extent, true);

  // Kept: both originals, then the snapshot's files with a layout of their own, in order.
  EXPECT_EQ(inodes(out), (std::vector<uint64_t>{10, 11, 20, 11}));
  EXPECT_EQ(out.files[3].subvolume, kSnapshot);
  EXPECT_TRUE(out.files[3].nodatasum());
  EXPECT_EQ(out.passed_over.readonly_aliases, 3u);  // the two copies and the empty file
  EXPECT_TRUE(out.files[0].readonly_alias);
  EXPECT_TRUE(out.files[1].readonly_alias);
  EXPECT_FALSE(out.files[2].readonly_alias);
  EXPECT_EQ(out.readonly_alias_subvolumes.subvolumes_of(0), std::vector<uint64_t>{kSnapshot});
  EXPECT_EQ(out.readonly_alias_subvolumes.subvolumes_of(1), std::vector<uint64_t>{kSnapshot});
  EXPECT_TRUE(out.readonly_alias_subvolumes.subvolumes_of(2).empty());

  // The dropped files' extents went with them; the kept ones point at their new index.
  EXPECT_EQ(extent_owners(out), (std::vector<uint64_t>{10, 10, 11, 20, 11}));
  EXPECT_EQ(out.extents[3].disk_bytenr, 9u << 20);
  EXPECT_EQ(out.extents[3].file, 2u);
  EXPECT_EQ(out.extents[4].file, 3u);
  // The kept snapshot files are registered under their new index.
  const FileExtent* e = out.extents.data();
  EXPECT_EQ(index.find(4096, 0, e + 3, e + 4), std::optional<uint32_t>(2));
  EXPECT_EQ(index.find(4096, btrfs::kInodeNoDataSum, e + 4, e + 5), std::optional<uint32_t>(3));
}

TEST(LayoutIndex, TwoCopiesInOneFoldedReadKeepTheFirst) {
  ScanResult out;
  LayoutIndex index;
  append(out, kSnapshot, 30, 4096, kOnePiece);
  append(out, kSnapshot, 31, 4096, kOnePiece);
  index.add(out, 0, 0, true);
  EXPECT_EQ(inodes(out), std::vector<uint64_t>{30});
  EXPECT_EQ(extent_owners(out), std::vector<uint64_t>{30});
  EXPECT_TRUE(out.files[0].readonly_alias);
  EXPECT_EQ(out.passed_over.readonly_aliases, 1u);
}

TEST(LayoutIndex, AFoldedReadWithNothingKnownKeepsEveryFileWithData) {
  ScanResult out;
  LayoutIndex index;
  append(out, kSnapshot, 30, 12288, kTwoPieces);
  append(out, kSnapshot, 31, 4096, kOnePiece);
  index.add(out, 0, 0, true);
  EXPECT_EQ(inodes(out), (std::vector<uint64_t>{30, 31}));
  EXPECT_EQ(extent_owners(out), (std::vector<uint64_t>{30, 30, 31}));
  EXPECT_EQ(out.passed_over.readonly_aliases, 0u);
  EXPECT_FALSE(out.files[0].readonly_alias);
}

}  // namespace
}  // namespace btrdedupe
