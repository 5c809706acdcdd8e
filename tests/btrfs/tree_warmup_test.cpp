// Warm-up threads that read a tree ahead of the scan (src/read/tree_warmup.h): the scan finds
// exactly the same files and extents with them as without, from a cold cache, on a tree
// of many leaves and chunks; the threads read the trees and end cleanly, also cancelled.
#include "src/read/tree_warmup.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <linux/btrfs_tree.h>

#include <string>
#include <tuple>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/subvolume.h"
#include "src/fingerprint/fingerprint.h"
#include "src/read/scanned_file.h"
#include "src/read/tree_scan.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

class TreeWarmupTest : public BtrfsTest {
 protected:
  // ~4200 files with regular extents, 1000 inline ones, and one file of 300 extents (its
  // items span leaves of one objectid): a subvolume tree of a few hundred leaves.
  void build_many_files() {
    sh("cd " + shell_quote(path("")) +
       " && mkdir -p t/r t/i t/x && head -c 21000000 /dev/urandom > blob"
       " && (cd t/r && split -b 5000 -a 4 ../../blob f)"
       " && (cd t/i && head -c 1000000 ../../blob | split -b 1000 -a 3 - s)"
       " && for i in $(seq 1 300); do dd if=/dev/urandom of=t/x/frag bs=4k count=1"
       " seek=$((i*2)) conv=notrunc status=none; done && rm blob && sync");
  }

  ScanResult cold_scan(unsigned warmup_threads, bool warm_csums = true) {
    std::string why;
    EXPECT_TRUE(fs().remount(&why)) << why;
    ScanOptions o;
    o.warmup_threads = warmup_threads;
    o.warm_csum_tree = warm_csums;
    auto r = scan_tree(path("t"), o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : ScanResult{};
  }

  int open_root() {
    auto fd = btrfs::Fd::open(path(""), O_RDONLY);
    EXPECT_TRUE(fd.ok());
    if (!fd) return -1;
    root_ = std::move(*fd);
    return root_.get();
  }

  static WarmupRange subvolume_tree() {
    WarmupRange r;
    r.tree_id = btrfs::kTopLevelSubvolume;
    r.first = BTRFS_FIRST_FREE_OBJECTID;
    r.last = BTRFS_LAST_FREE_OBJECTID;
    r.min_chunk = 64;
    return r;
  }

  btrfs::Fd root_;
};

auto file_fields(const ScanResult& r, const ScannedFile& f) {
  return std::make_tuple(f.subvolume, f.inode, f.size, f.inode_flags, f.parent, f.mtime_sec,
                         f.mtime_nsec, f.root, f.readonly_alias, relative_path(r, f));
}
auto extent_fields(const FileExtent& e) {
  return std::make_tuple(e.file, e.file_offset, e.length, e.disk_bytenr, e.disk_num_bytes,
                         e.extent_offset, e.compression);
}

void expect_same_scan(const ScanResult& a, const ScanResult& b) {
  ASSERT_EQ(a.files.size(), b.files.size());
  for (size_t i = 0; i < a.files.size(); ++i)
    EXPECT_EQ(file_fields(a, a.files[i]), file_fields(b, b.files[i])) << i;
  ASSERT_EQ(a.extents.size(), b.extents.size());
  for (size_t i = 0; i < a.extents.size(); ++i)
    EXPECT_EQ(extent_fields(a.extents[i]), extent_fields(b.extents[i])) << i;
  EXPECT_EQ(a.tree_items, b.tree_items);
  EXPECT_EQ(a.search_calls, b.search_calls);
  const auto& p = a.passed_over;
  const auto& q = b.passed_over;
  EXPECT_EQ(std::tie(p.inline_extents, p.inline_bytes, p.hole_extents, p.hole_bytes,
                     p.prealloc_extents, p.prealloc_bytes, p.excluded_files, p.readonly_aliases),
            std::tie(q.inline_extents, q.inline_bytes, q.hole_extents, q.hole_bytes,
                     q.prealloc_extents, q.prealloc_bytes, q.excluded_files, q.readonly_aliases));
}

TEST_F(TreeWarmupTest, ScanFindsTheSameFilesAndExtentsWithAndWithoutWarmup) {
  build_many_files();
  const ScanResult off = cold_scan(0);
  EXPECT_GE(off.files.size(), 5200u);
  EXPECT_GE(off.extents.size(), 4200u + 300u);
  EXPECT_GE(off.tree_items, 20000u);  // many leaves: several chunks for the threads
  for (unsigned threads : {1u, 3u, 4u}) {
    SCOPED_TRACE(std::to_string(threads) + " warm-up threads");
    expect_same_scan(off, cold_scan(threads));
  }
  expect_same_scan(off, cold_scan(3, /*warm_csums=*/false));

  // The csum tree warmed during the scan changes no sum either.
  const ScanResult warmed = cold_scan(3);
  auto a = fingerprint(off, {}, nullptr, 1);
  auto b = fingerprint(warmed, {}, nullptr, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->files.size(), b->files.size());
  for (size_t i = 0; i < a->files.size(); ++i) {
    EXPECT_TRUE(std::ranges::equal(a->files[i].sums, b->files[i].sums)) << i;
    EXPECT_TRUE(std::ranges::equal(a->files[i].known, b->files[i].known)) << i;
  }
}

TEST_F(TreeWarmupTest, ThreadsWalkTheChunksOfAColdTreeAndEnd) {
  build_many_files();
  std::string why;
  ASSERT_TRUE(fs().remount(&why)) << why;
  const int fd = open_root();
  btrfs::KernelTreeSource trees(fd);
  TreeWarmup warmup(trees, subvolume_tree(), 3, /*with_leader=*/false);
  warmup.join();
  const WarmupStats st = warmup.stats();
  EXPECT_EQ(st.chunks, 3u * 8u);  // 3 threads x 8 chunks: the tree spans enough inodes
  EXPECT_EQ(st.walked, st.chunks);  // without a leader every chunk is begun
  EXPECT_EQ(st.abandoned, 0u);  // no leader
  EXPECT_EQ(st.skipped, 0u);
  EXPECT_GT(st.items, 0u);
  EXPECT_GT(st.searches, st.walked);  // probes for the split points, then the walks
}

TEST_F(TreeWarmupTest, ALeaderAheadOfEveryChunkLeavesNothingToDo) {
  build_many_files();
  const int fd = open_root();
  btrfs::KernelTreeSource trees(fd);
  // The leader is past the whole range from the start.
  TreeWarmup warmup(trees, subvolume_tree(), 2, /*with_leader=*/true, BTRFS_LAST_FREE_OBJECTID);
  warmup.join();
  const WarmupStats st = warmup.stats();
  EXPECT_EQ(st.chunks, 2u * 8u + 1u);  // the leader's chunk 0 and 8 per thread
  EXPECT_EQ(st.skipped, st.chunks - 1);
  EXPECT_EQ(st.walked, 0u);
  EXPECT_EQ(st.items, 0u);
}

// Holds every walk's search until released, so a test can stop the threads at a known
// point: each has begun exactly one chunk. The plan's single-item probes pass through.
class GatedWalks final : public btrfs::TreeSource {
 public:
  explicit GatedWalks(btrfs::TreeSource& inner) : inner_(inner) {}
  std::unique_ptr<btrfs::ItemCursor> search(const btrfs::SearchKey& key,
                                            size_t buffer_bytes) override {
    std::unique_lock lock(mutex_);
    ++held_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    return inner_.search(key, buffer_bytes);
  }
  btrfs::Result<std::optional<btrfs::ItemKey>> first_key(const btrfs::SearchKey& key) override {
    return inner_.first_key(key);
  }
  void wait_for_held(unsigned n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return held_ >= n; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  btrfs::TreeSource& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  unsigned held_ = 0;
  bool open_ = false;
};

TEST_F(TreeWarmupTest, CancelStopsAndJoinsAtOnceAndRepeatedly) {
  build_many_files();
  std::string why;
  ASSERT_TRUE(fs().remount(&why)) << why;
  const int fd = open_root();
  btrfs::KernelTreeSource trees(fd);
  GatedWalks gated(trees);
  {
    TreeWarmup warmup(gated, subvolume_tree(), 4, /*with_leader=*/false);
    gated.wait_for_held(4);  // every thread is in the first search of its first chunk
    warmup.request_stop();
    gated.open();
    warmup.cancel();
    warmup.cancel();
    const WarmupStats st = warmup.stats();
    EXPECT_EQ(st.chunks, 4u * 8u);
    EXPECT_EQ(st.walked, 4u);  // the chunk each thread had begun, and no other
    EXPECT_EQ(st.items, 0u);   // each left at its first item
  }  // and the destructor after a cancel
  // Nothing to warm: an empty range, a tree without items there, no threads at all.
  WarmupRange empty = subvolume_tree();
  empty.first = empty.last = BTRFS_LAST_FREE_OBJECTID;
  TreeWarmup none(trees, empty, 2, false);
  none.join();
  EXPECT_EQ(none.stats().chunks, 0u);
  EXPECT_EQ(none.stats().items, 0u);
  TreeWarmup idle(trees, subvolume_tree(), 0, false);
  idle.join();
  EXPECT_EQ(idle.stats().searches, 0u);
}

TEST_F(TreeWarmupTest, CsumTreeAlongTheDiskAddress) {
  build_many_files();
  std::string why;
  ASSERT_TRUE(fs().remount(&why)) << why;
  const int fd = open_root();
  btrfs::KernelTreeSource trees(fd);
  WarmupRange csums;
  csums.tree_id = BTRFS_CSUM_TREE_OBJECTID;
  csums.axis = WarmupRange::Axis::Offset;
  csums.objectid = BTRFS_EXTENT_CSUM_OBJECTID;
  csums.type = BTRFS_EXTENT_CSUM_KEY;
  csums.min_chunk = 1 << 20;  // 22 MB of data: a few chunks
  TreeWarmup warmup(trees, csums, 2, /*with_leader=*/false);
  warmup.join();
  EXPECT_GE(warmup.stats().chunks, 2u);
  EXPECT_GT(warmup.stats().items, 0u);
}

}  // namespace
}  // namespace btrdedupe::test
