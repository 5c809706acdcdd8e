// Which reader a run takes (choose_reader), and what a walk's run counts as freed
// (kernel_walked's still_allocated): both without a filesystem.
#include "src/read/root_reader.h"

#include <gtest/gtest.h>

#include "src/run/run_kernel.h"

namespace btrdedupe {
namespace {

ReaderGround ground(btrfs::FsKind fs, bool root) {
  ReaderGround g;
  g.fs = fs;
  g.fs_name = fs == btrfs::FsKind::Other ? "ext2/ext3/ext4" : "";
  g.may_search_trees = root;
  return g;
}

TEST(ChooseReader, TreesWhereTreeSearchIsAllowedPathsOtherwise) {
  auto c = choose_reader(ground(btrfs::FsKind::Btrfs, true), "/p", std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Tree);
  EXPECT_EQ(c->note, "");
  c = choose_reader(ground(btrfs::FsKind::Btrfs, false), "/p", std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Paths);
  EXPECT_NE(c->note.find("tree search needs root"), std::string::npos) << c->note;
  EXPECT_NE(c->note.find("only files you may write"), std::string::npos) << c->note;
  c = choose_reader(ground(btrfs::FsKind::Xfs, true), "/p", std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Paths);
  EXPECT_NE(c->note.find("xfs has no trees to search"), std::string::npos) << c->note;
  EXPECT_EQ(c->note.find("only files you may write"), std::string::npos) << c->note;
}

TEST(ChooseReader, ForcedWhereItCanRun) {
  auto c = choose_reader(ground(btrfs::FsKind::Btrfs, true), "/p", ReaderKind::Paths);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Paths);
  EXPECT_EQ(c->note, "") << "asked for: no note";
  // Not root: the tree scan that follows says it needs root.
  c = choose_reader(ground(btrfs::FsKind::Btrfs, false), "/p", ReaderKind::Tree);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Tree);
  c = choose_reader(ground(btrfs::FsKind::Xfs, true), "/p", ReaderKind::Tree);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "/p is on xfs, which has no trees to search: use --reader=paths");
}

TEST(ChooseReader, OtherFilesystemsAreNamed) {
  const auto c = choose_reader(ground(btrfs::FsKind::Other, true), "/p", ReaderKind::Paths);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "/p is on ext2/ext3/ext4: btrdedupe dedupes on btrfs and XFS");
}

FileExtent mapped(uint64_t at, uint64_t length) {
  FileExtent e;
  e.disk_bytenr = at;
  e.length = length;
  e.disk_num_bytes = length;
  return e;
}

PhysicalExtent destination(uint64_t at, uint64_t bytes, bool refs_unknown = false) {
  PhysicalExtent x;
  x.bytenr = at;
  x.disk_bytes = bytes;
  x.refs_unknown = refs_unknown;
  return x;
}

TEST(WalkedKernel, AnExtentStaysWhileAnyOfItsBytesIsMappedOrItsReferencesAreUnknown) {
  ScanResult now;  // after the dedupe: what the files map
  now.extents = {mapped(0, 4096), mapped(1 << 20, 8192), mapped(1 << 21, 4096)};
  const std::vector<PhysicalExtent> planned = {
      destination(0, 4096),                  // still mapped: kept
      destination(4096, 8192),               // mapped by no file: freed
      destination((1 << 20) + 4096, 65536),  // its first bytes still mapped (a bookend)
      destination((1 << 20) - 4096, 4096),   // ends where a mapped range starts: freed
      destination(1 << 22, 4096, true),      // FIEMAP said SHARED: may be held outside
  };
  auto allocated = kernel_walked().still_allocated(now, planned, 0);
  ASSERT_TRUE(allocated);
  EXPECT_EQ(*allocated, (std::vector<bool>{true, false, true, false, true}));
}

}  // namespace
}  // namespace btrdedupe
