// The warm-up threads' rules (src/read/tree_warmup.h) over an in-memory tree: the chunks
// they plan and walk, a leader that overtakes them, and calls that come back as fast as
// cached ones. On a real cold tree: tests/btrfs/tree_warmup_test.cpp.
#include "src/read/tree_warmup.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <atomic>
#include <thread>

#include "tests/support/memory_tree_source.h"

namespace btrdedupe {
namespace {

using test::MemoryTreeSource;

// Csum items at 4 KiB steps from 1 GiB: the csum tree's coordinate is the key's offset.
constexpr uint64_t kFirst = 1ULL << 30;
constexpr size_t kItems = 4000;

WarmupRange csum_range() {
  WarmupRange r;
  r.tree_id = BTRFS_CSUM_TREE_OBJECTID;
  r.axis = WarmupRange::Axis::Offset;
  r.objectid = BTRFS_EXTENT_CSUM_OBJECTID;
  r.type = BTRFS_EXTENT_CSUM_KEY;
  r.first = 0;
  r.min_chunk = 4096;
  return r;
}

void add_csum_items(MemoryTreeSource& tree) {
  for (size_t i = 0; i < kItems; ++i)
    tree.add(BTRFS_CSUM_TREE_OBJECTID,
             {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, kFirst + 4096 * i},
             std::vector<uint8_t>(4, 1));
  // Items outside the box: another type at the same objectid, and another objectid.
  tree.add(BTRFS_CSUM_TREE_OBJECTID, {BTRFS_EXTENT_CSUM_OBJECTID, 1, 7}, {});
  tree.add(BTRFS_CSUM_TREE_OBJECTID, {BTRFS_EXTENT_CSUM_OBJECTID + 1, BTRFS_EXTENT_CSUM_KEY, 9},
           {});
}

// A source whose cursors report a search call every `items_per_call` items, as the kernel's
// do per result buffer, and that may run a hook as a walk starts.
class CountingSource final : public btrfs::TreeSource {
 public:
  explicit CountingSource(MemoryTreeSource& inner, uint64_t items_per_call)
      : inner_(inner), per_call_(items_per_call) {}
  std::function<void(const btrfs::SearchKey&)> on_search = [](const btrfs::SearchKey&) {};

  std::unique_ptr<btrfs::ItemCursor> search(const btrfs::SearchKey& key, size_t bytes) override {
    on_search(key);
    return std::make_unique<Cursor>(inner_.search(key, bytes), per_call_);
  }
  btrfs::Result<std::optional<btrfs::ItemKey>> first_key(const btrfs::SearchKey& key) override {
    return inner_.first_key(key);
  }

 private:
  class Cursor final : public btrfs::ItemCursor {
   public:
    Cursor(std::unique_ptr<btrfs::ItemCursor> inner, uint64_t per_call)
        : inner_(std::move(inner)), per_call_(per_call) {}
    btrfs::Result<std::optional<btrfs::TreeItem>> next() override {
      auto item = inner_->next();
      if (item && *item) calls_ = ++items_ / per_call_ + 1;
      return item;
    }
    uint64_t ioctl_calls() const override { return calls_; }

   private:
    std::unique_ptr<btrfs::ItemCursor> inner_;
    uint64_t per_call_, items_ = 0, calls_ = 1;
  };

  MemoryTreeSource& inner_;
  uint64_t per_call_;
};

TEST(TreeWarmupRules, ThreadsWalkEveryChunkOfTheRangeOnce) {
  MemoryTreeSource tree;
  add_csum_items(tree);
  for (unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    TreeWarmup warmup(tree, csum_range(), threads, /*with_leader=*/false);
    warmup.join();
    const WarmupStats st = warmup.stats();
    EXPECT_EQ(st.chunks, threads * 8);  // kChunksPerThread: the range is large enough
    EXPECT_EQ(st.walked, st.chunks);
    EXPECT_EQ(st.skipped + st.abandoned + st.cached, 0u);
    EXPECT_EQ(st.items, kItems);  // each item once: the chunks neither overlap nor leave gaps
  }
}

TEST(TreeWarmupRules, ARangeTooSmallForAChunkWarmsNothing) {
  MemoryTreeSource tree;
  add_csum_items(tree);
  WarmupRange r = csum_range();
  r.min_chunk = 4096 * kItems;  // the whole range is less than one chunk
  TreeWarmup warmup(tree, r, 2, false);
  warmup.join();
  EXPECT_EQ(warmup.stats().chunks, 0u);
  EXPECT_EQ(warmup.stats().walked, 0u);
}

// A leader past a chunk's start before a thread claims it: the chunk is skipped. A leader
// that catches up with a thread in a chunk: the thread leaves it.
TEST(TreeWarmupRules, ALeaderAheadSkipsChunksAndOneCatchingUpAbandonsThem) {
  MemoryTreeSource tree;
  add_csum_items(tree);
  {
    TreeWarmup ahead(tree, csum_range(), 2, /*with_leader=*/true, /*leader_start=*/UINT64_MAX);
    ahead.join();
    const WarmupStats st = ahead.stats();
    EXPECT_EQ(st.chunks, 2u * 8 + 1);  // chunk 0 is the leader's
    EXPECT_EQ(st.skipped, st.chunks - 1);
    EXPECT_EQ(st.walked, 0u);
  }
  CountingSource source(tree, 1'000'000);  // one call per walk: never taken as cached
  std::atomic<TreeWarmup*> warmup{nullptr};
  source.on_search = [&](const btrfs::SearchKey& key) {
    TreeWarmup* w;
    while (!(w = warmup.load())) std::this_thread::yield();
    w->leader_at(key.max_offset);  // the leader reaches the end of the chunk being walked
  };
  TreeWarmup caught(source, csum_range(), 1, /*with_leader=*/true, 0);
  warmup.store(&caught);
  caught.join();
  const WarmupStats st = caught.stats();
  EXPECT_GE(st.walked, 1u);
  EXPECT_EQ(st.abandoned, st.walked);
  EXPECT_EQ(st.items, st.walked);  // each walk left at its first item
  EXPECT_EQ(st.walked + st.skipped, st.chunks - 1);
}

// Calls that return as fast as cached ones: a thread leaves such a chunk after a few, and
// whatever each thread concluded, every chunk is walked or left, none twice.
TEST(TreeWarmupRules, ChunksFoundCachedAreLeft) {
  MemoryTreeSource tree;
  add_csum_items(tree);
  CountingSource source(tree, 10);  // a call per ten items: a chunk holds hundreds
  TreeWarmup warmup(source, csum_range(), 2, false);
  warmup.join();
  const WarmupStats st = warmup.stats();
  EXPECT_EQ(st.walked, st.chunks);
  EXPECT_LE(st.cached, st.walked);
  EXPECT_LE(st.items, kItems);
  // A chunk left as cached was left after its first calls, not read to the end.
  EXPECT_GE(st.items, st.walked);
}

}  // namespace
}  // namespace btrdedupe
