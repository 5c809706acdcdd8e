// Bringing a file range into the page cache and dropping it (src/dedupe/range_prefetch.h),
// on a real file in a temporary directory: what each way returns, and, where the kernel
// tells (cachestat) and the filesystem lets clean pages go (not tmpfs), what is cached.
#include "src/dedupe/range_prefetch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "btrfs/fd.h"
#include "unit/real_files.h"

namespace btrdedupe {
namespace {

using test::RealFiles;
constexpr uint64_t kSector = RealFiles::kSectorBytes;

class RangePrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_.add_file("f", test::sector_bytes(1, 64));
    auto fd = btrfs::Fd::open(files_.path("f"), O_RDONLY);
    ASSERT_TRUE(fd) << fd.error().message();
    fd_ = std::move(*fd);
    ASSERT_EQ(::fdatasync(fd_.get()), 0);  // clean pages, which DONTNEED may drop
    // No readahead past what is read: what is cached is then what the test read.
    ASSERT_EQ(::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_RANDOM), 0);
  }

  // Whether the kernel tells what is cached and lets this file's clean pages go.
  bool cache_observable() {
    release_range(fd_.get(), 0, 64 * kSector);
    return range_cached(fd_.get(), 0, 64 * kSector) == std::optional<bool>(false);
  }

  RealFiles files_;
  btrfs::Fd fd_;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(3 * kSector);  // smaller than a range
};

TEST_F(RangePrefetchTest, EachWayReturnsTheBytesItReadOrAskedFor) {
  EXPECT_EQ(prefetch_range(Prefetch::None, fd_.get(), 0, 8 * kSector, buf_), 0u);
  EXPECT_EQ(prefetch_range(Prefetch::Fadvise, fd_.get(), 0, 8 * kSector, buf_), 8 * kSector);
  EXPECT_EQ(prefetch_range(Prefetch::Readahead, fd_.get(), 8 * kSector, 8 * kSector, buf_),
            8 * kSector);
  // Read goes through its buffer several times, and stops at the end of the file.
  EXPECT_EQ(prefetch_range(Prefetch::Read, fd_.get(), 16 * kSector, 10 * kSector, buf_),
            10 * kSector);
  EXPECT_EQ(prefetch_range(Prefetch::Read, fd_.get(), 60 * kSector, 10 * kSector, buf_),
            4 * kSector);
  EXPECT_EQ(prefetch_range(Prefetch::Read, fd_.get(), 64 * kSector, kSector, buf_), 0u);
}

TEST_F(RangePrefetchTest, AReadRangeIsCachedAndAReleasedOneIsNot) {
  EXPECT_EQ(range_cached(fd_.get(), 0, 0), std::optional<bool>(false));
  if (!cache_observable()) GTEST_SKIP() << "the page cache cannot be observed here";
  EXPECT_EQ(prefetch_range(Prefetch::Read, fd_.get(), 8 * kSector, 8 * kSector, buf_),
            8 * kSector);
  EXPECT_EQ(range_cached(fd_.get(), 8 * kSector, 8 * kSector), std::optional<bool>(true));
  EXPECT_EQ(range_cached(fd_.get(), 32 * kSector, 8 * kSector), std::optional<bool>(false));
  release_range(fd_.get(), 8 * kSector, 8 * kSector);
  EXPECT_EQ(range_cached(fd_.get(), 8 * kSector, 8 * kSector), std::optional<bool>(false));
}

}  // namespace
}  // namespace btrdedupe
