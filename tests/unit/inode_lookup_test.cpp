// SubvolumeInodes over an in-memory tree: targeted reads, sequential reads that stop and
// resume, runs of inodes with deleted ones among them, directory paths and entries.
#include "src/read/inode_lookup.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <vector>

#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kTree = 256;

class InodeLookupTest : public ::testing::Test {
 protected:
  InodeLookupTest() {
    t.dir(257, 256, "a");
    t.dir(258, 257, "b");
    for (uint64_t ino = 260; ino < 300; ++ino) {
      t.file(ino, 258, "f" + std::to_string(ino), 8192);
      t.extent(ino, 0, 4096, ino << 20);
    }
    t.extent(261, 4096, 4096, 9ull << 30);  // 261: two extents
    t.hole(262, 4096, 4096);
    t.xattr(263);
    t.remove_inode(270);  // deleted
    t.remove_inode(271);
    t.file(300, 256, "inline", 10);
    t.inline_extent(300, "0123456789");
    t.extref(300, 258, "second-name");
    t.entry(258, 260, "f260");
    t.entry(258, 261, "f261");
    t.entry(258, 5000, "nested", BTRFS_ROOT_ITEM_KEY);
  }
  MemoryTreeSource source;
  SyntheticTree t{source, kTree};
  SubvolumeInodes inodes{source, kTree};
};

TEST_F(InodeLookupTest, ReadGivesTheItemFirstNameAndExtentsOrNothing) {
  auto s = inodes.read(261, true);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(*s);
  EXPECT_TRUE((*s)->item.is_regular());
  EXPECT_EQ((*s)->item.size, 8192u);
  EXPECT_EQ((*s)->parent, 258u);
  EXPECT_EQ((*s)->name, "f261");
  ASSERT_EQ((*s)->extents.size(), 2u);
  EXPECT_EQ((*s)->extents[1].file_offset, 4096u);
  EXPECT_EQ((*s)->extents[1].disk_bytenr, 9ull << 30);
  EXPECT_EQ((*s)->extents[0].file, 0u);

  auto hole = inodes.read(262, true);
  ASSERT_TRUE(hole.ok() && *hole);
  EXPECT_EQ((*hole)->extents.size(), 1u);
  EXPECT_EQ((*hole)->passed_over.hole_extents, 1u);
  EXPECT_EQ((*hole)->passed_over.hole_bytes, 4096u);
  auto in = inodes.read(300, true);
  ASSERT_TRUE(in.ok() && *in);
  EXPECT_TRUE((*in)->extents.empty());
  EXPECT_EQ((*in)->passed_over.inline_bytes, 10u);
  EXPECT_EQ((*in)->parent, 256u);  // the INODE_REF's, not the later EXTREF's
  EXPECT_EQ((*in)->name, "inline");

  auto no_extents = inodes.read(261, false);
  ASSERT_TRUE(no_extents.ok() && *no_extents);
  EXPECT_TRUE((*no_extents)->extents.empty());
  auto gone = inodes.read(270, true);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
  EXPECT_EQ(inodes.items(), 4u + 4u + 4u + 2u);  // 261, 262, 300, then 261 without extents
}

TEST_F(InodeLookupTest, ReadFromStopsWhereAskedAndResumesThere) {
  std::vector<uint64_t> seen;
  auto next = inodes.read_from(0, [&](uint64_t ino, InodeState& s) {
    seen.push_back(ino);
    EXPECT_EQ(s.item.is_directory(), ino < 260) << ino;
    return seen.size() < 5;
  });
  ASSERT_TRUE(next.ok()) << next.error().message();
  EXPECT_EQ(seen, (std::vector<uint64_t>{256, 257, 258, 260, 261}));
  EXPECT_EQ(*next, 262u);  // where the next read begins
  seen.clear();
  auto end = inodes.read_from(*next, [&](uint64_t ino, InodeState&) {
    seen.push_back(ino);
    return true;
  }, 275);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, 0u);  // ran to `last`: nothing is left
  EXPECT_EQ(seen, (std::vector<uint64_t>{262, 263, 264, 265, 266, 267, 268, 269, 272, 273,
                                         274, 275}));
  EXPECT_EQ(source.searches(), 2u);
  // Directories met on the way serve directory_below() without a search.
  auto path = inodes.directory_below(258, 256);
  ASSERT_TRUE(path.ok() && *path);
  EXPECT_EQ(**path, "a/b");
  EXPECT_EQ(source.searches(), 2u);
}

TEST_F(InodeLookupTest, ReadEachReadsRunsTogetherAndSaysWhichAreGone) {
  // A run (265..280, gaps <= 32), a lone inode far away, and one past the tree's end.
  const std::vector<uint64_t> wanted{265, 270, 271, 275, 280, 299, 5000, 9000};
  std::vector<std::pair<uint64_t, bool>> got;
  auto ok = inodes.read_each(wanted, [&](uint64_t ino, const InodeState* s) -> btrfs::Result<void> {
    got.emplace_back(ino, s != nullptr);
    if (s) {
      EXPECT_EQ(s->name, "f" + std::to_string(ino));
      EXPECT_EQ(s->extents.size(), 1u);
    }
    return {};
  });
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, bool>>{{265, true}, {270, false},
                                                         {271, false}, {275, true},
                                                         {280, true}, {299, true},
                                                         {5000, false}, {9000, false}}));
  EXPECT_EQ(source.searches(), 3u);  // 265..299 together; 5000 and 9000 one each
  // An error of `each` ends the reads.
  got.clear();
  auto stopped = inodes.read_each(wanted, [&](uint64_t ino, const InodeState*) -> btrfs::Result<void> {
    got.emplace_back(ino, true);
    if (ino == 271) return btrfs::Error{EIO, "stop"};
    return {};
  });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code, EIO);
  EXPECT_EQ(got.size(), 3u);
}

TEST_F(InodeLookupTest, DirectoriesAndTheirEntries) {
  auto below = inodes.directory_below(258, 257);
  ASSERT_TRUE(below.ok() && *below);
  EXPECT_EQ(**below, "b");
  auto same = inodes.directory_below(258, 258);
  ASSERT_TRUE(same.ok() && *same);
  EXPECT_EQ(**same, "");
  auto outside = inodes.directory_below(257, 258);  // up to the top: never meets 258
  ASSERT_TRUE(outside.ok());
  EXPECT_FALSE(*outside);
  auto children = inodes.children(258);
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, (std::vector<uint64_t>{260, 261}));  // not the subvolume
}

}  // namespace
}  // namespace btrdedupe::test
