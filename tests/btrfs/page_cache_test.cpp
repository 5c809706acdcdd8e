// What a dedupe run leaves in the page cache: the ranges it brought in are dropped once
// their calls are made, pages cached before the run stay (DedupeRun::release).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/dedupe/range_prefetch.h"
#include "support/btrfs_image.h"
#include "support/planned_dedupe.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

// Under DedupeRun's kReadInWorkerBytes: Prefetch::Fadvise asks the ranges in ahead.
constexpr uint64_t kFileBytes = 512 << 10;
constexpr uint64_t kPages = kFileBytes / 4096;

class PageCacheTest : public BtrfsTest {
 protected:
  // Pages of the file in the page cache, by mincore(2) over a mapping (which reads none).
  uint64_t cached_pages(const std::string& rel) {
    auto fd = btrfs::Fd::open(path(rel), O_RDONLY);
    EXPECT_TRUE(fd.ok()) << rel;
    if (!fd.ok()) return 0;
    void* map = ::mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd->get(), 0);
    EXPECT_NE(map, MAP_FAILED) << rel;
    if (map == MAP_FAILED) return 0;
    std::vector<unsigned char> in_core(kPages);
    EXPECT_EQ(::mincore(map, kFileBytes, in_core.data()), 0) << rel;
    ::munmap(map, kFileBytes);
    uint64_t n = 0;
    for (unsigned char c : in_core) n += c & 1;
    return n;
  }
};

TEST_F(PageCacheTest, ARunDropsWhatItReadAndKeepsWhatWasCachedBefore) {
  // Four copies, cold (dd's nocache drops a whole file's pages), then d read: hot.
  sh("cd " + shell_quote(path("")) +
     " && head -c " + std::to_string(kFileBytes) + " /dev/urandom > a"
     " && for f in b c d; do cp --reflink=never a $f; done && sync"
     " && for f in a b c d; do dd if=$f iflag=nocache count=0 status=none; done"
     " && cat d > /dev/null");
  for (const char* f : {"a", "b", "c"}) ASSERT_EQ(cached_pages(f), 0u) << f;
  ASSERT_EQ(cached_pages("d"), kPages);
  auto d = btrfs::Fd::open(path("d"), O_RDONLY);
  ASSERT_TRUE(d.ok());
  const bool kernel_tells = range_cached(d->get(), 0, kFileBytes).has_value();

  for (Prefetch how : {Prefetch::Fadvise, Prefetch::Read}) {
    auto p = plan_dedupe(path(""), {});
    if (how == Prefetch::Read) {  // again from cold: b, c and d share a's extent now
      sh("cd " + shell_quote(path("")) + " && head -c " + std::to_string(kFileBytes) +
         " /dev/urandom > a && cp --reflink=never a b && sync"
         " && for f in a b; do dd if=$f iflag=nocache count=0 status=none; done");
      p = plan_dedupe(path(""), {});
    }
    ASSERT_EQ(p.plan.rounds.size(), 1u);
    DedupeOptions o;
    o.prefetch = how;
    const auto stats = run_dedupe(p.scan, p.plan, o);
    ASSERT_EQ(stats.ranges_same, p.plan.rounds[0].destinations.size());
    EXPECT_GT(stats.bytes_deduped, 0u);
    for (const char* f : {"a", "b", "c"}) EXPECT_EQ(cached_pages(f), 0u) << f;
    if (kernel_tells) {
      EXPECT_EQ(cached_pages("d"), kPages);
    }
  }
}

// A source with more copies than one call takes is the source of two rounds, queued at
// once: the range the first brought in is the second's too, and dropped after the last.
TEST_F(PageCacheTest, ASourceOfTwoRoundsIsDroppedAfterTheLast) {
  sh("cd " + shell_quote(path("")) + " && head -c " + std::to_string(kFileBytes) +
     " /dev/urandom > f0 && for i in $(seq 1 130); do cp --reflink=never f0 f$i; done"
     " && sync && for i in $(seq 0 130); do dd if=f$i iflag=nocache count=0 status=none; done");
  auto p = plan_dedupe(path(""), {});
  ASSERT_EQ(p.plan.rounds.size(), 2u);  // 130 destinations: 127 + 3
  ASSERT_EQ(p.plan.rounds[0].source.file, p.plan.rounds[1].source.file);
  DedupeOptions o;
  o.io_threads = 1;  // the rounds one after the other: the first is done before the second
  const auto stats = run_dedupe(p.scan, p.plan, o);
  ASSERT_EQ(stats.ranges_same, 130u);
  for (int i = 0; i <= 130; ++i) EXPECT_EQ(cached_pages("f" + std::to_string(i)), 0u) << i;
}

}  // namespace
}  // namespace btrdedupe::test
