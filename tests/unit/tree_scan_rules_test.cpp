// The tree scan's rules (scan_queue: membership, --min-size, --exclude, nested subvolumes,
// passed-over counts, the file limit) over in-memory subvolume trees. Moved here from
// tests/btrfs/tree_scan_test.cpp: nothing of them is the kernel's but the items.
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <deque>
#include <set>
#include <string>

#include "src/read/scanned_file.h"
#include "src/read/subvolume_queue_scan.h"
#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kTop = BTRFS_FIRST_FREE_OBJECTID;

btrfs::Subvolume subvolume(uint64_t id, const std::string& path, uint64_t parent,
                           uint64_t dir) {
  btrfs::Subvolume s;
  s.id = id;
  s.path = path;
  s.parent_id = parent;
  s.dir_id = dir;
  return s;
}

class TreeScanRules : public ::testing::Test {
 protected:
  // Scans directory `top` of subvolume `subvol` as a root, as scan_tree would.
  btrfs::Result<ScanResult> scan(uint64_t subvol, uint64_t top, ScanOptions o) {
    o.warmup_threads = 0;
    ScanResult out;
    out.roots.push_back({"/synthetic", false});
    std::deque<Work> queue{{subvol, top, "", PathTable::kRoot, 0}};
    if (auto ok = scan_queue(source, std::move(queue), all, 0, o, out); !ok) return ok.error();
    return out;
  }
  std::set<std::string> paths(const btrfs::Result<ScanResult>& r) {
    EXPECT_TRUE(r.ok()) << r.error().message();
    std::set<std::string> s;
    if (r.ok())
      for (const auto& f : r->files) s.insert(relative_path(*r, f));
    return s;
  }
  // A file of `size` bytes in one regular extent of its own.
  void data_file(SyntheticTree& t, uint64_t ino, uint64_t parent, const std::string& name,
                 uint64_t size) {
    t.file(ino, parent, name, size);
    t.extent(ino, 0, (size + 4095) / 4096 * 4096, ino << 20);
  }

  MemoryTreeSource source;
  SyntheticTree fs_tree{source, BTRFS_FS_TREE_OBJECTID};
  std::vector<btrfs::Subvolume> all{subvolume(BTRFS_FS_TREE_OBJECTID, "", 0, 0)};
};

// Only directories are kept while a subvolume is read; a file whose directory was made
// after it (a higher inode) is judged once the whole subvolume is read, like any other.
// (On btrfs: mkdir t out, files early tiny stray leaves stays, mkdir -p t/later/sub, then
// mv t/early t/later/sub/moved, t/tiny t/later/tiny, out/stray t/later/stray, t/leaves out/left.)
TEST_F(TreeScanRules, FilesMovedIntoLaterDirectoriesAreJudgedWithTheirPaths) {
  SyntheticTree& t = fs_tree;
  t.dir(257, kTop, "t");
  t.dir(258, kTop, "out");
  data_file(t, 259, 265, "moved", 20000);
  t.file(260, 264, "tiny", 100);
  t.inline_extent(260, std::string(100, 'x'));
  data_file(t, 261, 264, "stray", 20000);
  data_file(t, 262, 258, "left", 20000);
  data_file(t, 263, 257, "stays", 20000);
  t.dir(264, 257, "later");
  t.dir(265, 264, "sub");

  ScanOptions o;
  o.min_file_size = 1000;
  auto r = scan(BTRFS_FS_TREE_OBJECTID, 257, o);
  EXPECT_EQ(paths(r), (std::set<std::string>{"stays", "later/sub/moved", "later/stray"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->passed_over.excluded_files, 1u);  // tiny, below the root
  EXPECT_EQ(r->excluded, 0u);
  for (const auto& f : r->files) EXPECT_EQ(f.size, 20000u);

  std::set<std::string> asked;
  o.exclude = [&](const std::string& root, const std::string& rel) {
    EXPECT_EQ(root, "/synthetic");
    asked.insert(rel);
    return rel == "later/sub/moved";
  };
  auto x = scan(BTRFS_FS_TREE_OBJECTID, 257, o);
  EXPECT_EQ(paths(x), (std::set<std::string>{"stays", "later/stray"}));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->excluded, 1u);
  EXPECT_EQ(x->passed_over.excluded_files, 1u);
  EXPECT_EQ(asked, (std::set<std::string>{"stays", "later/sub/moved", "later/stray",
                                          "later/tiny"}));  // never out/left

  // Without paths (the confirmation scan): the same files.
  ScanOptions counting;
  counting.min_file_size = 1000;
  counting.keep_paths = false;
  auto c = scan(BTRFS_FS_TREE_OBJECTID, 257, counting);
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->files.size(), r->files.size());
  for (size_t i = 0; i < c->files.size(); ++i) EXPECT_EQ(c->files[i].inode, r->files[i].inode);
  EXPECT_EQ(c->extents.size(), r->extents.size());
}

// (On btrfs: mkdir top, top/f, subvolume top/sub with d/g, subvolume outside with h.)
TEST_F(TreeScanRules, NestedSubvolumesOnlyWithRecursion) {
  fs_tree.dir(257, kTop, "top");
  data_file(fs_tree, 258, 257, "f", 20000);
  fs_tree.entry(257, 256, "sub", BTRFS_ROOT_ITEM_KEY);
  fs_tree.entry(kTop, 257, "outside", BTRFS_ROOT_ITEM_KEY);
  SyntheticTree sub(source, 256);
  sub.dir(257, kTop, "d");
  data_file(sub, 258, 257, "g", 20000);
  SyntheticTree outside(source, 257);
  data_file(outside, 257, kTop, "h", 20000);
  all.push_back(subvolume(256, "top/sub", BTRFS_FS_TREE_OBJECTID, 257));
  all.push_back(subvolume(257, "outside", BTRFS_FS_TREE_OBJECTID, kTop));

  ScanOptions o;
  auto r = scan(BTRFS_FS_TREE_OBJECTID, 257, o);
  EXPECT_EQ(paths(r), (std::set<std::string>{"f", "sub/d/g"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->subvolumes.size(), 2u);
  o.recursive = false;
  EXPECT_EQ(paths(scan(BTRFS_FS_TREE_OBJECTID, 257, o)), (std::set<std::string>{"f"}));
  o.recursive = true;
  EXPECT_EQ(paths(scan(256, 257, o)), (std::set<std::string>{"g"}));  // root top/sub/d
  o.excluded_subvolumes = {256};
  auto without = scan(BTRFS_FS_TREE_OBJECTID, 257, o);
  EXPECT_EQ(paths(without), (std::set<std::string>{"f"}));
  EXPECT_EQ(without->excluded, 1u);
}

// (On btrfs: fallocate -l 1M pre; truncate -s 4M sparse and 64 KiB written at 1 MiB.)
TEST_F(TreeScanRules, HolesAndPreallocArePassedOver) {
  fs_tree.file(257, kTop, "pre", 1 << 20);
  fs_tree.prealloc(257, 0, 1 << 20, 1 << 30);
  fs_tree.file(258, kTop, "sparse", 4 << 20);
  fs_tree.hole(258, 0, 1 << 20);  // explicit hole items: filesystems without no-holes
  fs_tree.extent(258, 1 << 20, 64 << 10, 2ull << 30);
  fs_tree.file(259, kTop, "tiny", 3);
  fs_tree.inline_extent(259, "abc");
  auto r = scan(BTRFS_FS_TREE_OBJECTID, kTop, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->files.size(), 3u);  // kept, with nothing or little to dedupe
  EXPECT_EQ(r->passed_over.prealloc_extents, 1u);
  EXPECT_EQ(r->passed_over.prealloc_bytes, 1u << 20);
  EXPECT_EQ(r->passed_over.hole_extents, 1u);
  EXPECT_EQ(r->passed_over.hole_bytes, 1u << 20);
  EXPECT_EQ(r->passed_over.inline_extents, 1u);
  EXPECT_EQ(r->passed_over.inline_bytes, 3u);
  EXPECT_EQ(summarize_sharing(r->extents).logical_bytes, 64u << 10);
  for (const auto& f : r->files) EXPECT_EQ(f.inline_data, f.inode == 259) << f.inode;
}

// A scan told how many files it may hold stops with EFBIG past that: the run then reads
// the tree in windows instead.
TEST_F(TreeScanRules, MoreFilesThanAllowedIsEfbig) {
  fs_tree.dir(257, kTop, "m");
  for (uint64_t i = 0; i < 20; ++i) data_file(fs_tree, 258 + i, 257, "f" + std::to_string(i), 5000);
  ScanOptions o;
  o.max_files = 20;
  auto fits = scan(BTRFS_FS_TREE_OBJECTID, 257, o);
  ASSERT_TRUE(fits.ok()) << fits.error().message();
  EXPECT_EQ(fits->files.size(), 20u);
  o.max_files = 19;
  auto over = scan(BTRFS_FS_TREE_OBJECTID, 257, o);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, EFBIG);
}

// A read-only snapshot (subvolume 260 at "snap") of the top subvolume, where "a" is still
// the same data, "b" was rewritten, "new" was written and "empty" has no extent at all.
class ReadOnlySnapshotFold : public TreeScanRules {
 protected:
  ReadOnlySnapshotFold() {
    data_file(fs_tree, 257, kTop, "a", 20000);
    data_file(fs_tree, 258, kTop, "b", 20000);
    fs_tree.entry(kTop, 260, "snap", BTRFS_ROOT_ITEM_KEY);
    SyntheticTree snap(source, 260);
    data_file(snap, 257, kTop, "a", 20000);  // the same extent: a copy of top's a
    snap.file(258, kTop, "b", 20000);
    snap.extent(258, 0, 20480, 9ULL << 30);  // b's data written again
    data_file(snap, 259, kTop, "new", 8000);
    snap.file(261, kTop, "empty", 0);
    btrfs::Subvolume sv = subvolume(260, "snap", BTRFS_FS_TREE_OBJECTID, kTop);
    sv.readonly = true;
    all.push_back(sv);
  }

  // The scan's files by path, and which of them stand for folded copies.
  void expect_folded(const btrfs::Result<ScanResult>& r) {
    EXPECT_EQ(paths(r), (std::set<std::string>{"a", "b", "snap/b", "snap/new"}));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->passed_over.readonly_aliases, 2u);  // snap/a, and snap/empty
    for (uint32_t f = 0; f < r->files.size(); ++f) {
      const bool a = relative_path(*r, r->files[f]) == "a";
      EXPECT_EQ(r->files[f].readonly_alias, a) << relative_path(*r, r->files[f]);
      EXPECT_EQ(r->readonly_alias_subvolumes.subvolumes_of(f),
                a ? std::vector<uint64_t>{260} : std::vector<uint64_t>{});
    }
    for (const auto& e : r->extents) ASSERT_LT(e.file, r->files.size());
    EXPECT_EQ(r->extents.size(), 4u);
  }
};

// Read whole, the snapshot drops its copies as they are read.
TEST_F(ReadOnlySnapshotFold, CopiesFoldIntoTheFilesScannedBefore) {
  expect_folded(scan(BTRFS_FS_TREE_OBJECTID, kTop, {}));
}

// With excludes every path is needed first: the copies fold after the snapshot's read.
TEST_F(ReadOnlySnapshotFold, CopiesFoldAfterTheReadWhenPathsAreJudged) {
  ScanOptions o;
  o.exclude = [](const std::string&, const std::string&) { return false; };
  expect_folded(scan(BTRFS_FS_TREE_OBJECTID, kTop, o));
}

TEST_F(ReadOnlySnapshotFold, WithoutFoldingEveryFileIsKept) {
  ScanOptions o;
  o.fold_readonly_aliases = false;
  auto r = scan(BTRFS_FS_TREE_OBJECTID, kTop, o);
  EXPECT_EQ(paths(r), (std::set<std::string>{"a", "b", "snap/a", "snap/b", "snap/new",
                                             "snap/empty"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->passed_over.readonly_aliases, 0u);
}

// Not reached (no recursion), the snapshot folds nothing and costs no index.
TEST_F(ReadOnlySnapshotFold, ASnapshotNotReadFoldsNothing) {
  ScanOptions o;
  o.recursive = false;
  auto r = scan(BTRFS_FS_TREE_OBJECTID, kTop, o);
  EXPECT_EQ(paths(r), (std::set<std::string>{"a", "b"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->passed_over.readonly_aliases, 0u);
  for (const auto& f : r->files) EXPECT_FALSE(f.readonly_alias);
}

}  // namespace
}  // namespace btrdedupe::test
