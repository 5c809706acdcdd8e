// FS_IOC_FIEMAP through btrfs::fiemap, against real extent layouts.
#include "btrfs/fiemap.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/kernel_test_util.h"

namespace btrdedupe::test {
namespace {

class FiemapTest : public BtrfsTest {};

TEST_F(FiemapTest, ReflinkedCopySharesTheSamePhysicalExtents) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom > a && cp --reflink=always a b && sync");
  const auto a = extents_of(path("a"));
  const auto b = extents_of(path("b"));
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  uint64_t covered = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].logical, b[i].logical);
    EXPECT_EQ(a[i].physical, b[i].physical);
    EXPECT_NE(a[i].physical, 0u);
    EXPECT_TRUE(a[i].shared()) << "extent " << i << " of a";
    EXPECT_TRUE(b[i].shared()) << "extent " << i << " of b";
    covered += a[i].length;
  }
  EXPECT_EQ(covered, 1048576u);
  EXPECT_TRUE(a.back().last());
  EXPECT_TRUE(b.back().last());
}

TEST_F(FiemapTest, NonReflinkedCopySharesNothing) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom > a && cp --reflink=never a c && sync");
  const auto a = extents_of(path("a"));
  const auto c = extents_of(path("c"));
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(c.empty());
  std::set<uint64_t> physical_of_a;
  for (const auto& e : a) {
    EXPECT_FALSE(e.shared());
    physical_of_a.insert(e.physical);
  }
  for (const auto& e : c) {
    EXPECT_FALSE(e.shared());
    EXPECT_EQ(physical_of_a.count(e.physical), 0u) << "copy reuses physical " << e.physical;
  }
}

// 2000 extents need four calls of 512: the loop must list every one, in order, once.
TEST_F(FiemapTest, ListsEveryExtentOfAFileWithMoreThanOneCallCanReturn) {
  constexpr int kExtents = 2000;
  constexpr uint64_t kBlock = 4096;
  {
    auto fd = open_or_fail(path("holey"), O_WRONLY | O_CREAT);
    std::vector<char> block(kBlock, 'x');
    // A hole after each block keeps every block its own file extent.
    for (int i = 0; i < kExtents; ++i)
      ASSERT_EQ(::pwrite(fd.get(), block.data(), kBlock, static_cast<off_t>(i * 2 * kBlock)),
                static_cast<ssize_t>(kBlock));
  }
  // sync=true (the default) must flush the delalloc blocks itself.
  const auto map = extents_of(path("holey"));
  ASSERT_EQ(map.size(), static_cast<size_t>(kExtents));
  for (int i = 0; i < kExtents; ++i) {
    EXPECT_EQ(map[i].logical, i * 2 * kBlock) << "extent " << i;
    EXPECT_EQ(map[i].length, kBlock) << "extent " << i;
    EXPECT_NE(map[i].physical, 0u) << "extent " << i;
    EXPECT_EQ(map[i].last(), i == kExtents - 1) << "extent " << i;
  }
  // An independent FIEMAP user agrees on the count (its summary line merges physically
  // contiguous extents; its verbose listing does not).
  const auto listed = sh("filefrag -v " + shell_quote(path("holey")) +
                         " | grep -cE '^ *[0-9]+:'");
  EXPECT_EQ(listed, "2000\n");
}

TEST_F(FiemapTest, ReturnsOnlyExtentsOverlappingTheAskedRange) {
  constexpr uint64_t kBlock = 4096;
  {
    auto fd = open_or_fail(path("holey"), O_WRONLY | O_CREAT);
    std::vector<char> block(kBlock, 'y');
    for (int i = 0; i < 1100; ++i)
      ASSERT_EQ(::pwrite(fd.get(), block.data(), kBlock, static_cast<off_t>(i * 2 * kBlock)),
                static_cast<ssize_t>(kBlock));
  }
  auto fd = open_or_fail(path("holey"));
  // From the middle of extent 600 to the middle of extent 1050: 451 extents.
  const uint64_t start = 600 * 2 * kBlock + 100;
  const uint64_t end = 1050 * 2 * kBlock + 100;
  auto map = btrfs::fiemap(fd.get(), start, end - start);
  ASSERT_TRUE(map.ok()) << map.error().message();
  ASSERT_EQ(map->size(), 451u);
  EXPECT_EQ(map->front().logical, 600 * 2 * kBlock);
  EXPECT_EQ(map->back().logical, 1050 * 2 * kBlock);
  EXPECT_FALSE(map->back().last());
}

TEST_F(FiemapTest, TinyFileIsInline) {
  sh("printf hello > " + shell_quote(path("tiny")) + " && sync");
  const auto map = extents_of(path("tiny"));
  ASSERT_EQ(map.size(), 1u);
  EXPECT_TRUE(map[0].inline_data());
  EXPECT_TRUE(map[0].last());
  EXPECT_EQ(map[0].logical, 0u);
  EXPECT_EQ(map[0].physical, 0u);
}

TEST_F(FiemapTest, FallocatedRangeIsUnwritten) {
  sh("fallocate -l 1048576 " + shell_quote(path("prealloc")) + " && sync");
  const auto map = extents_of(path("prealloc"));
  ASSERT_FALSE(map.empty());
  uint64_t covered = 0;
  for (const auto& e : map) {
    EXPECT_TRUE(e.unwritten());
    EXPECT_FALSE(e.encoded());
    covered += e.length;
  }
  EXPECT_EQ(covered, 1048576u);
  EXPECT_TRUE(map.back().last());
}

TEST_F(FiemapTest, EmptyFileHasNoExtents) {
  sh("touch " + shell_quote(path("empty")));
  EXPECT_TRUE(extents_of(path("empty")).empty());
}

TEST_F(FiemapTest, BadFdIsAnErrorWithContext) {
  auto map = btrfs::fiemap(-1);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.error().code, EBADF);
  EXPECT_NE(map.error().context.find("FIEMAP"), std::string::npos);
}

class FiemapCompressedTest : public BtrfsTest {
  ImageOptions image_options() const override {
    ImageOptions options;
    options.mount_options = "compress-force=zstd";
    return options;
  }
};

TEST_F(FiemapCompressedTest, CompressedExtentsAreEncoded) {
  sh("yes btrdedupe | head -c 1048576 > " + shell_quote(path("text")) + " && sync");
  const auto map = extents_of(path("text"));
  ASSERT_FALSE(map.empty());
  uint64_t covered = 0;
  for (const auto& e : map) {
    EXPECT_TRUE(e.encoded()) << "extent at " << e.logical;
    // btrfs compresses in chunks of at most 128 KiB.
    EXPECT_LE(e.length, 128u * 1024);
    covered += e.length;
  }
  EXPECT_EQ(covered, 1048576u);
  EXPECT_TRUE(map.back().last());
}

}  // namespace
}  // namespace btrdedupe::test
