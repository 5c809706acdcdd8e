// read_subvolume_tree over an in-memory tree: what it keeps of each inode, what it counts.
#include "src/read/subvolume_tree_reader.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kTree = 5;

class SubvolumeTreeReaderTest : public ::testing::Test {
 protected:
  SubvolumeTreeReaderTest() {
    t.dir(257, 256, "d");
    t.file(258, 257, "two-extents", 12288);
    t.xattr(258);
    t.extent(258, 0, 4096, 1 << 20);
    t.hole(258, 4096, 4096);
    t.extent(258, 8192, 4096, 2 << 20, btrfs::Compression::Zstd);
    t.file(259, 256, "tiny", 5);
    t.inline_extent(259, "hello");
    t.file(260, 257, "pre", 65536);
    t.prealloc(260, 0, 65536, 3 << 20);
    t.inode(261, 0120777, 3);  // a symlink: its inline target is not a file's data
    t.name_of(261, 256, "link");
    t.inline_extent(261, "two");
    t.inode(262, 0100600, 0);  // named only by an INODE_EXTREF
    t.extref(262, 257, "ext");
  }

  btrfs::Result<SubvolumeTree> read(bool names, uint64_t max_files = 0,
                                    const DropFile& drop = {}) {
    return read_subvolume_tree(source, kTree, out, names, 0, max_files, drop);
  }

  MemoryTreeSource source;
  SyntheticTree t{source, kTree};
  ScanResult out;
};

TEST_F(SubvolumeTreeReaderTest, KeepsDirectoriesFilesAndRegularExtentsCountsTheRest) {
  auto tree = read(true);
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  ASSERT_EQ(tree->dirs.size(), 2u);
  EXPECT_EQ(tree->dirs[0].ino, 256u);
  EXPECT_EQ(tree->dirs[1].ino, 257u);
  EXPECT_EQ(tree->dirs[1].parent, 256u);
  EXPECT_EQ(tree->dir_name(1), "d");
  EXPECT_EQ(tree->find_dir(257), 1u);
  EXPECT_EQ(tree->find_dir(258), std::string::npos);

  ASSERT_EQ(tree->files.size(), 4u);  // not the symlink
  const uint64_t inodes[] = {258, 259, 260, 262}, parents[] = {257, 256, 257, 257};
  const uint64_t sizes[] = {12288, 5, 65536, 0};
  const char* names[] = {"two-extents", "tiny", "pre", "ext"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(tree->files[i].ino, inodes[i]);
    EXPECT_EQ(tree->files[i].parent, parents[i]) << names[i];
    EXPECT_EQ(tree->files[i].size, sizes[i]);
    EXPECT_EQ(tree->file_name(i), names[i]);
  }
  EXPECT_EQ(tree->files[0].mtime().sec, 1700000000 + 258);

  // The two regular extents of the first file, FileExtent::file its index in tree.files.
  ASSERT_EQ(out.extents.size(), 2u);
  EXPECT_EQ(out.extents[0].file, 0u);
  EXPECT_EQ(out.extents[0].file_offset, 0u);
  EXPECT_EQ(out.extents[0].disk_bytenr, 1u << 20);
  EXPECT_EQ(out.extents[1].file_offset, 8192u);
  EXPECT_EQ(out.extents[1].length, 4096u);
  EXPECT_EQ(out.extents[1].compression, btrfs::Compression::Zstd);

  // The hole, the inline extent and the prealloc one are only counted, once kept.
  ASSERT_EQ(tree->passed.size(), 3u);
  EXPECT_EQ(tree->passed[0].file, 0u);
  EXPECT_EQ(tree->passed[0].type, btrfs::FileExtentType::Regular);
  EXPECT_EQ(tree->passed[1].type, btrfs::FileExtentType::Inline);
  EXPECT_EQ(tree->passed[1].length, 5u);
  EXPECT_EQ(tree->passed[2].type, btrfs::FileExtentType::Prealloc);
  EXPECT_EQ(tree->passed[2].length, 65536u);
  PassedOver p;
  for (const auto& piece : tree->passed) count_passed_over(piece, p);
  EXPECT_EQ(p.hole_bytes, 4096u);
  EXPECT_EQ(p.inline_extents, 1u);
  EXPECT_EQ(p.prealloc_extents, 1u);
  EXPECT_EQ(out.passed_over.inline_extents, 0u);  // not yet: the scan counts kept files

  EXPECT_EQ(out.tree_items, source.items(kTree));  // the box holds every item here
  EXPECT_EQ(source.searches(), 1u);
}

TEST_F(SubvolumeTreeReaderTest, WithoutNamesOnlyTheParentLinks) {
  auto tree = read(false);
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  EXPECT_EQ(tree->files[3].parent, 257u);
  EXPECT_TRUE(tree->file_names.empty());
  EXPECT_EQ(tree->file_name(0), "");
  EXPECT_EQ(tree->dir_name(1), "");
}

TEST_F(SubvolumeTreeReaderTest, MoreFilesThanAllowedIsEfbig) {
  out.files.resize(1);  // one held already
  EXPECT_TRUE(read(false, 5).ok());
  out.extents.clear();
  auto over = read(false, 4);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, EFBIG);
  EXPECT_NE(over.error().message().find("subvolume 5"), std::string::npos);
}

TEST_F(SubvolumeTreeReaderTest, ADroppedFileLeavesNothingButItsCounts) {
  std::vector<uint64_t> judged;
  auto tree = read(true, 0, [&](const PendingFile& f, const FileExtent* first,
                                const FileExtent* end) {
    judged.push_back(f.ino);
    if (f.ino == 258) {
      EXPECT_EQ(end - first, 2);  // judged with all its extents read
    }
    return f.ino == 258 || f.ino == 259;
  });
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  EXPECT_EQ(judged, (std::vector<uint64_t>{258, 259, 260, 262}));
  ASSERT_EQ(tree->files.size(), 2u);
  EXPECT_EQ(tree->files[0].ino, 260u);
  EXPECT_EQ(tree->file_name(0), "pre");
  EXPECT_TRUE(out.extents.empty());
  // The dropped files' hole and inline extent are counted at once, as for a kept file.
  EXPECT_EQ(out.passed_over.hole_extents, 1u);
  EXPECT_EQ(out.passed_over.inline_bytes, 5u);
  ASSERT_EQ(tree->passed.size(), 1u);
  EXPECT_EQ(tree->passed[0].file, 0u);  // pre's prealloc, pending with it
}

TEST_F(SubvolumeTreeReaderTest, AMalformedItemSaysWhichSubvolume) {
  source.add(kTree, {263, BTRFS_INODE_ITEM_KEY, 0}, {1, 2, 3});
  auto tree = read(false);
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.error().code, EUCLEAN);
  EXPECT_NE(tree.error().message().find("subvolume 5: INODE_ITEM too short"), std::string::npos)
      << tree.error().message();
}

}  // namespace
}  // namespace btrdedupe::test
