// LOGICAL_INO_V2 and INO_PATHS through btrfs::logical_ino and btrfs::inode_paths.
#include "btrfs/backrefs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "btrfs/subvolume.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/kernel_test_util.h"
#include "tests/btrfs/tree_search_helpers.h"

namespace btrdedupe::test {
namespace {

using RefSet = std::set<std::tuple<uint64_t, uint64_t, uint64_t>>;  // (inode, offset, root)

RefSet as_set(const std::vector<btrfs::ExtentRef>& refs) {
  RefSet set;
  for (const auto& r : refs) set.emplace(r.inode, r.offset, r.root);
  return set;
}

uint64_t subvolume_of(const std::string& path) {
  auto fd = open_or_fail(path);
  auto id = btrfs::subvolume_id(fd.get());
  EXPECT_TRUE(id.ok()) << id.error().message();
  return id.ok() ? *id : 0;
}

// FICLONERANGE of [src_offset, +length) of src into dst at dst_offset.
void clone_range(const std::string& src, uint64_t src_offset, uint64_t length,
                 const std::string& dst, uint64_t dst_offset) {
  auto in = open_or_fail(src);
  auto out = open_or_fail(dst, O_RDWR);
  struct file_clone_range range {};
  range.src_fd = in.get();
  range.src_offset = src_offset;
  range.src_length = length;
  range.dest_offset = dst_offset;
  ASSERT_EQ(::ioctl(out.get(), FICLONERANGE, &range), 0) << "FICLONERANGE " << src << " " << dst;
}

// 1 MiB of random data as one extent; returns the extent's disk address. One direct write
// nearly always makes one extent, but the kernel may split it under memory or writeback
// pressure (other tests run concurrently), so a split file is written again.
size_t extent_items_of(const std::string& file) {
  auto fd = open_or_fail(file, O_RDONLY);
  btrfs::SearchKey key;
  key.tree_id = subvolume_of(file);
  key.min_objectid = key.max_objectid = inode_of(file);
  key.min_type = key.max_type = BTRFS_EXTENT_DATA_KEY;
  return search_all(fd.get(), key).items.size();
}

uint64_t one_extent_file(const std::string& file) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    const auto written = run_command("rm -f " + shell_quote(file) + " && dd if=/dev/urandom of=" +
                                     shell_quote(file) +
                                     " bs=1M count=1 iflag=fullblock oflag=direct status=none");
    EXPECT_EQ(written.exit_code, 0) << written.output;
    const auto map = extents_of(file);
    // FIEMAP merges physically adjacent extent items (a direct write split under load
    // leaves two), so the tree must show exactly one item too.
    if (map.size() == 1 && map[0].length == 1024 * 1024 && extent_items_of(file) == 1)
      return map[0].physical;
  }
  ADD_FAILURE() << "could not write " << file << " as a single extent";
  return 0;
}

class LogicalInoTest : public BtrfsTest {};

TEST_F(LogicalInoTest, ReflinkedExtentIsReferencedByBothInodes) {
  const uint64_t extent = one_extent_file(path("a"));
  sh("cd " + shell_quote(path("")) + " && cp --reflink=always a b && sync");
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  bool truncated = true;
  auto refs = btrfs::logical_ino(fd.get(), extent, /*ignore_offset=*/true, &truncated);
  ASSERT_TRUE(refs.ok()) << refs.error().message();
  EXPECT_FALSE(truncated);
  const uint64_t top = btrfs::kTopLevelSubvolume;
  EXPECT_EQ(as_set(*refs), (RefSet{{inode_of(path("a")), 0, top}, {inode_of(path("b")), 0, top}}));
}

TEST_F(LogicalInoTest, SnapshotReferencesComeBackWithEachRoot) {
  sh("btrfs -q subvolume create " + shell_quote(path("sv")));
  const uint64_t extent = one_extent_file(path("sv/f"));
  sh("cd " + shell_quote(path("")) + " && sync && btrfs -q subvolume snapshot sv snap && sync");
  const uint64_t sv = subvolume_of(path("sv"));
  const uint64_t snap = subvolume_of(path("snap"));
  ASSERT_NE(sv, snap);
  const uint64_t ino = inode_of(path("sv/f"));
  ASSERT_EQ(inode_of(path("snap/f")), ino);  // a snapshot keeps inode numbers
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  auto refs = btrfs::logical_ino(fd.get(), extent, /*ignore_offset=*/true);
  ASSERT_TRUE(refs.ok()) << refs.error().message();
  EXPECT_EQ(as_set(*refs), (RefSet{{ino, 0, sv}, {ino, 0, snap}}));
}

// What `offset` means, measured with a partial clone: b uses a's extent from its 256 KiB
// point, at b's file offset 1 MiB.
TEST_F(LogicalInoTest, OffsetIsTheFileOffsetOfTheQueriedByteOrOfTheFileExtentItem) {
  constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
  const uint64_t extent = one_extent_file(path("a"));
  sh("head -c 2097152 /dev/urandom > " + shell_quote(path("b")) + " && sync");
  clone_range(path("a"), 256 * KiB, 256 * KiB, path("b"), MiB);
  sh("sync");
  const uint64_t a = inode_of(path("a")), b = inode_of(path("b"));
  const uint64_t top = btrfs::kTopLevelSubvolume;
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);

  // ignore_offset: where each file's extent item starts (b: 1 MiB, not 1 MiB - 256 KiB).
  auto all = btrfs::logical_ino(fd.get(), extent, true);
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(as_set(*all), (RefSet{{a, 0, top}, {b, MiB, top}}));

  // Without it: only the references covering that byte, at the byte's file offset.
  auto first_byte = btrfs::logical_ino(fd.get(), extent, false);
  ASSERT_TRUE(first_byte.ok()) << first_byte.error().message();
  EXPECT_EQ(as_set(*first_byte), (RefSet{{a, 0, top}}));

  auto inner = btrfs::logical_ino(fd.get(), extent + 300 * KiB + 1, false);
  ASSERT_TRUE(inner.ok()) << inner.error().message();
  EXPECT_EQ(as_set(*inner),
            (RefSet{{a, 300 * KiB + 1, top}, {b, MiB + 44 * KiB + 1, top}}));

  // 6.18 also accepts an inner address with ignore_offset.
  auto inner_all = btrfs::logical_ino(fd.get(), extent + 300 * KiB, true);
  ASSERT_TRUE(inner_all.ok()) << inner_all.error().message();
  EXPECT_EQ(as_set(*inner_all), as_set(*all));
}

// 3001 references need 72 KiB: more than the first 64 KiB buffer.
TEST_F(LogicalInoTest, BufferGrowsUntilEveryReferenceFits) {
  constexpr uint64_t kBlock = 4096;
  constexpr int kClones = 3000;
  sh("cd " + shell_quote(path("")) + " && head -c 4096 /dev/urandom > block && touch many && sync");
  for (int i = 0; i < kClones; ++i) clone_range(path("block"), 0, kBlock, path("many"), i * kBlock);
  sh("sync");
  const auto block = extents_of(path("block"));
  ASSERT_EQ(block.size(), 1u);
  const uint64_t extent = block[0].physical;
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  bool truncated = true;
  auto refs = btrfs::logical_ino(fd.get(), extent, true, &truncated);
  ASSERT_TRUE(refs.ok()) << refs.error().message();
  EXPECT_FALSE(truncated);
  const auto set = as_set(*refs);
  ASSERT_EQ(refs->size(), static_cast<size_t>(kClones + 1));
  ASSERT_EQ(set.size(), refs->size());
  const uint64_t many = inode_of(path("many"));
  for (int i = 0; i < kClones; ++i)
    EXPECT_EQ(set.count({many, i * kBlock, btrfs::kTopLevelSubvolume}), 1u) << i;
  EXPECT_EQ(set.count({inode_of(path("block")), 0, btrfs::kTopLevelSubvolume}), 1u);
}

TEST_F(LogicalInoTest, AddressWithoutDataExtentIsENOENT) {
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  auto refs = btrfs::logical_ino(fd.get(), 999ULL << 30, true);
  ASSERT_FALSE(refs.ok());
  EXPECT_EQ(refs.error().code, ENOENT);
  EXPECT_NE(refs.error().context.find(std::to_string(999ULL << 30)), std::string::npos);
}

class InodePathsTest : public BtrfsTest {};

TEST_F(InodePathsTest, PathIsRelativeToTheSubvolumeOfTheFd) {
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create s && mkdir -p s/x/y && echo hi > s/x/y/z");
  const uint64_t ino = inode_of(path("s/x/y/z"));
  for (const std::string via : {"s", "s/x", "s/x/y/z"}) {
    auto fd = open_or_fail(path(via));
    bool truncated = true;
    auto paths = btrfs::inode_paths(fd.get(), ino, &truncated);
    ASSERT_TRUE(paths.ok()) << paths.error().message();
    EXPECT_EQ(*paths, std::vector<std::string>{"x/y/z"}) << "via " << via;
    EXPECT_FALSE(truncated);
  }
}

TEST_F(InodePathsTest, GivesEveryHardlinkName) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir d e && echo data > d/f && ln d/f d/g && ln d/f e/h");
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  auto paths = btrfs::inode_paths(fd.get(), inode_of(path("d/f")));
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  EXPECT_EQ(std::set<std::string>(paths->begin(), paths->end()),
            (std::set<std::string>{"d/f", "d/g", "e/h"}));
  EXPECT_EQ(paths->size(), 3u);
}

// The kernel caps INO_PATHS at 4 KiB: 61 names of ~200 bytes cannot all come back.
TEST_F(InodePathsTest, ManyLongNamesAreTruncatedAndSaidSo) {
  sh("cd " + shell_quote(path("")) + " && mkdir d && touch d/f && for i in $(seq 1 60); do " +
     "ln d/f d/$(printf 'n%0200d' $i); done");
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  bool truncated = false;
  auto paths = btrfs::inode_paths(fd.get(), inode_of(path("d/f")), &truncated);
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  EXPECT_TRUE(truncated);
  EXPECT_GE(paths->size(), 15u);
  EXPECT_LT(paths->size(), 61u);
  for (const auto& p : *paths) EXPECT_EQ(inode_of(path(p)), inode_of(path("d/f"))) << p;
}

TEST_F(InodePathsTest, DeletedInodeIsENOENT) {
  sh("cd " + shell_quote(path("")) + " && echo gone > f");
  const uint64_t ino = inode_of(path("f"));
  sh("rm " + shell_quote(path("f")));
  auto fd = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  auto paths = btrfs::inode_paths(fd.get(), ino);
  ASSERT_FALSE(paths.ok());
  EXPECT_EQ(paths.error().code, ENOENT);
  EXPECT_NE(paths.error().context.find("inode " + std::to_string(ino)), std::string::npos);
}

}  // namespace
}  // namespace btrdedupe::test
