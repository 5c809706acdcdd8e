// IncrementalScan over an in-memory tree: which inodes changed since a generation, and
// which files the full scan would have (check/add), without a filesystem.
#include "src/read/incremental_scan.h"

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <vector>

#include "src/read/scanned_file.h"
#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kSub = 256;

class IncrementalScanTest : public ::testing::Test {
 protected:
  IncrementalScanTest() {
    all.push_back(subvolume_below_top(kSub, "sub"));
    t.dir(257, 256, "d");
    t.file(258, 257, "data", 20000);
    t.extent(258, 0, 20480, 1 << 20);
    t.file(259, 257, "small", 100);
    t.inline_extent(259, std::string(100, 's'));
    t.file(260, 256, "prealloc-only", 20000);
    t.prealloc(260, 0, 20480, 2 << 20);
    t.inode(261, 0120777, 4);  // a symlink
    t.name_of(261, 256, "link");
    t.inode(262, 0100644, 20000);  // no name: an orphan, deleted but still open
    t.file(263, 257, "skip-me", 20000);
    t.extent(263, 0, 20480, 3 << 20);
  }
  std::unique_ptr<IncrementalScan> make(const ScanOptions& options) {
    return IncrementalScan::of_tree_source(source, {{kSub, "/synthetic/sub"}}, all, options, out);
  }
  InodeState state(std::unique_ptr<IncrementalScan>& scan, uint64_t ino) {
    auto s = scan->read(kSub, ino);
    EXPECT_TRUE(s.ok() && *s) << ino;
    return s.ok() && *s ? std::move(**s) : InodeState{};
  }

  MemoryTreeSource source;
  SyntheticTree t{source, kSub};
  std::vector<btrfs::Subvolume> all;
  ScanResult out;
};

TEST_F(IncrementalScanTest, ChangedInodesAreThoseWrittenAfterSinceUpToUntil) {
  t.generation = 20;
  t.inode(258, 0100644, 30000);  // rewritten in 20
  t.generation = 30;
  t.inode(263, 0100644, 1);  // and in 30
  // An inode item unchanged since 10 in a leaf written in 20 (beside 258's).
  btrfs::InodeItem old;
  old.transid = 10;
  old.mode = 0100644;
  source.add(kSub, {264, BTRFS_INODE_ITEM_KEY, 0}, btrfs::encode_inode_item(old), 20);
  auto scan = make({});
  std::vector<uint64_t> changed;
  auto each = [&](uint64_t ino, const btrfs::InodeItem& item) {
    changed.push_back(ino);
    EXPECT_GT(item.transid, 15u);
  };
  ASSERT_TRUE(scan->changed_inodes(kSub, 15, 25, each).ok());
  EXPECT_EQ(changed, (std::vector<uint64_t>{258}));
  changed.clear();
  ASSERT_TRUE(scan->changed_inodes(kSub, 15, 30, each).ok());
  EXPECT_EQ(changed, (std::vector<uint64_t>{258, 263}));
  changed.clear();
  ASSERT_TRUE(scan->changed_inodes(kSub, 30, 40, each).ok());
  EXPECT_TRUE(changed.empty());
  auto gone = scan->changed_inodes(999, 0, 40, each);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message().find("subvolume 999"), std::string::npos);
}

TEST_F(IncrementalScanTest, CheckAndAddApplyTheFullScansRules) {
  ScanOptions o;
  o.min_file_size = 1000;
  o.exclude = [](const std::string& root, const std::string& rel) {
    EXPECT_EQ(root, "/synthetic/sub");
    return rel == "d/skip-me";
  };
  auto scan = make(o);
  using Outcome = IncrementalScan::Outcome;
  auto check = [&](uint64_t ino) {
    auto c = scan->check(kSub, state(scan, ino));
    EXPECT_TRUE(c.ok()) << c.error().message();
    return c.ok() ? *c : Outcome::OutOfScope;
  };
  EXPECT_EQ(check(258), Outcome::Added);
  EXPECT_EQ(check(259), Outcome::Small);       // below --min-size
  EXPECT_EQ(check(260), Outcome::NoData);      // prealloc only: nothing to dedupe
  EXPECT_EQ(check(261), Outcome::OutOfScope);  // not a regular file
  EXPECT_EQ(check(262), Outcome::OutOfScope);  // no name: below no root
  EXPECT_EQ(check(263), Outcome::Excluded);    // --exclude
  EXPECT_TRUE(out.files.empty());              // check() adds nothing

  auto added = scan->add(out, kSub, 258, state(scan, 258));
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, Outcome::Added);
  ASSERT_EQ(out.files.size(), 1u);
  const ScannedFile& f = out.files[0];
  EXPECT_EQ(f.inode, 258u);
  EXPECT_EQ(f.subvolume, kSub);
  EXPECT_EQ(f.size, 20000u);
  EXPECT_EQ(f.parent, 257u);
  EXPECT_EQ(relative_path(out, f), "d/data");
  ASSERT_EQ(out.extents.size(), 1u);
  EXPECT_EQ(out.extents[0].disk_bytenr, 1u << 20);
  scan->finish(out);
  EXPECT_EQ(scan->fd(), -1);
  EXPECT_GT(out.tree_items, 0u);
  EXPECT_EQ(out.search_calls, 0u);  // the memory source makes no ioctl
}

TEST_F(IncrementalScanTest, WindowsReadTheWholeTreeInChunksOfTheRoomLeft) {
  auto scan = make({});
  std::vector<uint64_t> files;
  uint64_t without_extents = 0, inline_bytes = 0;
  size_t windows = 0;
  for (bool more = true; more; ++windows) {
    ScanResult window = out;
    auto r = scan->read_window(window, 1);
    ASSERT_TRUE(r.ok()) << r.error().message();
    more = *r;
    EXPECT_LE(window.files.size(), 1u);
    for (const auto& f : window.files) files.push_back(f.inode);
    without_extents += window.files_without_extents;
    inline_bytes += window.passed_over.inline_bytes;
  }
  // One file with data a window; the inline-only and prealloc-only files are counted as
  // the whole scan counts them, not kept; the symlink and the orphan are out of scope.
  EXPECT_EQ(files, (std::vector<uint64_t>{258, 263}));
  EXPECT_EQ(windows, 2u);
  EXPECT_EQ(without_extents, 2u);
  EXPECT_EQ(inline_bytes, 100u);
  EXPECT_EQ(scan->read_fraction(), 1.0);
}

// Each chunk of a window is read with a warm-up ahead of it (TreeWarmup): threads that
// search the same tree at once and drop what they read. What the windows hold must not
// depend on them.
TEST_F(IncrementalScanTest, WindowsHoldTheSameFilesWithOrWithoutTheWarmUp) {
  for (uint64_t ino = 300; ino < 3300; ++ino) {
    t.file(ino, 257, "f" + std::to_string(ino), 4096);
    t.extent(ino, 0, 4096, (16ULL << 20) + ino * 4096);
  }
  auto read_all = [&](unsigned threads) {
    ScanOptions o;
    o.warmup_threads = threads;
    ScanResult base = out;
    auto scan = IncrementalScan::of_tree_source(source, {{kSub, "/synthetic/sub"}}, all, o, base);
    std::vector<std::pair<size_t, uint64_t>> seen;  // (window, inode)
    for (size_t w = 0, more = 1; more && w < 100; ++w) {
      ScanResult window = base;
      auto r = scan->read_window(window, 700);
      EXPECT_TRUE(r.ok()) << r.error().message();
      if (!r.ok()) break;
      more = *r;
      for (const auto& f : window.files) seen.emplace_back(w, f.inode);
    }
    return seen;
  };
  const uint64_t probes_before = source.probes();
  const auto plain = read_all(0);
  EXPECT_EQ(source.probes(), probes_before);  // no thread, no probe
  ASSERT_EQ(plain.size(), 3002u);             // 258, 263 and the 3000 added
  EXPECT_EQ(read_all(3), plain);
}

// A window whose files are partly inline (counted, not held) is read in one walk of the
// tree: its chunks go on with the same search. A walk per chunk took about ten ever
// smaller ones a window, each a search (and a warm-up) of its own. The windows hold every
// file with data once, in inode order, the same with the warm-up's threads as without
// them, also when --min-size leaves most files out (the warm-up then starts again as the
// walk passes the part it read ahead).
TEST_F(IncrementalScanTest, AWindowOfPartlyInlineFilesIsReadInOneWalk) {
  for (uint64_t ino = 300; ino < 3300; ++ino) {
    const bool data = ino % 2;
    t.file(ino, 257, "f" + std::to_string(ino), data ? (ino % 10 == 1 ? 65536 : 4096) : 100);
    if (data)
      t.extent(ino, 0, ino % 10 == 1 ? 65536 : 4096, (16ULL << 20) + ino * 65536);
    else
      t.inline_extent(ino, std::string(100, 'i'));
  }
  struct Read {
    std::vector<uint64_t> searches, inodes;
    std::vector<size_t> sizes;
  };
  const auto read_all = [&](unsigned threads, uint64_t min_size) {
    ScanOptions o;
    o.warmup_threads = threads;
    o.min_file_size = min_size;
    ScanResult base = out;
    auto scan = IncrementalScan::of_tree_source(source, {{kSub, "/synthetic/sub"}}, all, o, base);
    Read r;
    for (bool more = true; more && r.sizes.size() < 100;) {
      ScanResult window = base;
      const uint64_t before = source.searches();
      auto read = scan->read_window(window, 700);
      EXPECT_TRUE(read.ok()) << read.error().message();
      if (!read.ok()) break;
      more = *read;
      r.searches.push_back(source.searches() - before);
      r.sizes.push_back(window.files.size());
      for (const auto& f : window.files) r.inodes.push_back(f.inode);
    }
    return r;
  };
  const Read plain = read_all(0, 0);
  std::vector<uint64_t> with_data = {258, 263};
  for (uint64_t ino = 301; ino < 3300; ino += 2) with_data.push_back(ino);
  EXPECT_EQ(plain.inodes, with_data);
  EXPECT_EQ(plain.sizes, (std::vector<size_t>{700, 700, 102}));
  EXPECT_EQ(plain.searches, (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(read_all(3, 0).inodes, plain.inodes);
  // --min-size 64 KiB: 300 files of 3,002 are held, all in one window.
  const Read big = read_all(0, 65536);
  EXPECT_EQ(big.sizes, (std::vector<size_t>{300}));
  EXPECT_EQ(read_all(3, 65536).inodes, big.inodes);
}

}  // namespace
}  // namespace btrdedupe::test
