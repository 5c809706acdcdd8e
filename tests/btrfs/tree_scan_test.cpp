// The metadata-only scan against known layouts.
#include "src/read/tree_scan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <set>

#include "src/read/incremental_scan.h"
#include "src/read/scanned_file.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

class TreeScanTest : public BtrfsTest {
 protected:
  ScanResult scan(const std::string& rel, bool recursive = true) {
    ScanOptions o;
    o.recursive = recursive;
    auto r = scan_tree(path(rel), o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : ScanResult{};
  }
  std::set<std::string> paths(const ScanResult& r) {
    std::set<std::string> s;
    for (const auto& f : r.files) s.insert(relative_path(r, f));
    return s;
  }
};

TEST_F(TreeScanTest, FindsEveryRegularFileWithItsPathAndSize) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir -p t/a/b t/c && head -c 300000 /dev/urandom > t/a/b/big"
     " && head -c 100 /dev/urandom > t/c/tiny && : > t/empty && ln -s big t/a/b/link"
     " && mkdir t/x && head -c 9000 /dev/urandom > 't/x/with space' && sync");
  const auto r = scan("t");
  EXPECT_EQ(paths(r), (std::set<std::string>{"a/b/big", "c/tiny", "empty", "x/with space"}));
  for (const auto& f : r.files) {
    struct stat st {};
    const std::string rel = relative_path(r, f);
    ASSERT_EQ(::stat(path("t/" + rel).c_str(), &st), 0) << rel;
    EXPECT_EQ(f.size, static_cast<uint64_t>(st.st_size)) << rel;
    EXPECT_EQ(f.inode, st.st_ino) << rel;
  }
  // 300000 + 9000 bytes in regular extents; the 100-byte file is inline.
  EXPECT_EQ(summarize_sharing(r.extents).logical_bytes, 300000u / 4096 * 4096 + 4096 + 12288u);
  EXPECT_EQ(r.passed_over.inline_extents, 1u);
  EXPECT_EQ(r.passed_over.inline_bytes, 100u);
}

TEST_F(TreeScanTest, ReflinksAndSnapshotsAreAlreadySharedCopiesAreNot) {
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create vol && head -c 1048576 /dev/urandom > vol/f"
     " && cp --reflink=always vol/f vol/reflink && cp --reflink=never vol/f vol/copy"
     " && btrfs -q subvolume snapshot -r vol vol/snap && sync");
  // By default the read-only snapshot's files are folded into their identical originals.
  const auto folded = scan("vol");
  EXPECT_EQ(paths(folded), (std::set<std::string>{"f", "reflink", "copy"}));
  EXPECT_EQ(folded.passed_over.readonly_aliases, 3u);
  // f and reflink have one layout, so the snapshot's copies of both fold into one of them.
  size_t flagged = 0;
  for (const auto& f : folded.files) {
    flagged += f.readonly_alias;
    if (relative_path(folded, f) == "copy") {
      EXPECT_TRUE(f.readonly_alias);
    }
  }
  EXPECT_EQ(flagged, 2u);
  EXPECT_EQ(summarize_sharing(folded.extents).unique_bytes, 2u << 20);

  // Unfolded (read-only snapshots may be destinations): every file is listed.
  ScanOptions all;
  all.fold_readonly_aliases = false;
  auto r = *scan_tree(path("vol"), all);
  EXPECT_EQ(paths(r), (std::set<std::string>{"f", "reflink", "copy", "snap/f", "snap/reflink",
                                             "snap/copy"}));
  EXPECT_EQ(r.subvolumes.size(), 2u);
  const auto s = summarize_sharing(r.extents);
  EXPECT_EQ(s.logical_bytes, 6u << 20);
  EXPECT_EQ(s.unique_bytes, 2u << 20);  // f (with its reflinks and snapshot) and copy
  EXPECT_EQ(s.shared_bytes, 4u << 20);
}

TEST_F(TreeScanTest, ManyReadOnlySnapshotsCostNoMoreFiles) {
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create vol && for i in 1 2 3 4 5; do"
     " head -c 50000 /dev/urandom > vol/f$i; done"
     " && for k in 1 2 3 4 5 6 7 8; do btrfs -q subvolume snapshot -r vol snap$k; done"
     " && head -c 50000 /dev/urandom > vol/new && btrfs -q subvolume snapshot -r vol snap9 && sync");
  const auto r = scan("");
  EXPECT_EQ(r.files.size(), 6u);  // vol's files only: every snapshot copy folds into them
  EXPECT_EQ(r.passed_over.readonly_aliases, 8u * 5 + 6);
  EXPECT_EQ(r.subvolumes.size(), 11u);
}

// A read-only snapshot read whole drops its copies as it is read; with --exclude patterns it
// folds them after the read instead. Both must give the same scan.
TEST_F(TreeScanTest, SnapshotCopiesFoldTheSameWhileReadAndAfterTheRead) {
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create vol && mkdir vol/d && for i in 1 2 3; do"
     " head -c 70000 /dev/urandom > vol/d/f$i; done && head -c 300 /dev/urandom > vol/inline"
     " && truncate -s 1M vol/sparse && head -c 8192 /dev/urandom | dd of=vol/sparse bs=4096"
     " seek=100 conv=notrunc status=none && head -c 5000 /dev/urandom > vol/small"
     " && btrfs -q subvolume snapshot -r vol snap1"
     " && head -c 70000 /dev/urandom > vol/later && btrfs -q subvolume snapshot -r vol snap2"
     " && rm vol/d/f2 && sync");
  ScanOptions streamed;
  streamed.min_file_size = 6000;
  ScanOptions after_read = streamed;
  after_read.exclude = [](const std::string&, const std::string&) { return false; };
  auto a = scan_tree(path(""), streamed);
  auto b = scan_tree(path(""), after_read);
  ASSERT_TRUE(a.ok() && b.ok());
  // snap1 and snap2 hold f2, which vol lost: kept once (from snap1), snap2's copy folds.
  EXPECT_EQ(paths(*a), (std::set<std::string>{"vol/d/f1", "vol/d/f3", "vol/sparse",
                                              "vol/later", "snap1/d/f2"}));
  EXPECT_EQ(paths(*a), paths(*b));
  ASSERT_EQ(a->files.size(), b->files.size());
  for (size_t i = 0; i < a->files.size(); ++i) {
    EXPECT_EQ(a->files[i].inode, b->files[i].inode);
    EXPECT_EQ(a->files[i].subvolume, b->files[i].subvolume);
    EXPECT_EQ(a->files[i].readonly_alias, b->files[i].readonly_alias) << relative_path(*a, a->files[i]);
  }
  ASSERT_EQ(a->extents.size(), b->extents.size());
  for (size_t i = 0; i < a->extents.size(); ++i) {
    EXPECT_EQ(a->extents[i].file, b->extents[i].file);
    EXPECT_EQ(a->extents[i].disk_bytenr, b->extents[i].disk_bytenr);
  }
  const PassedOver &pa = a->passed_over, &pb = b->passed_over;
  EXPECT_EQ(pa.readonly_aliases, pb.readonly_aliases);
  EXPECT_EQ(pa.readonly_aliases, 8u);  // snap1: f1 f3 sparse; snap2: those, later and f2
  EXPECT_EQ(pa.inline_extents, pb.inline_extents);
  EXPECT_EQ(pa.hole_extents, pb.hole_extents);
  EXPECT_EQ(pa.hole_bytes, pb.hole_bytes);
  EXPECT_EQ(pa.excluded_files, pb.excluded_files);
  EXPECT_EQ(pa.excluded_files, 6u);  // small and inline, in vol and both snapshots
  EXPECT_EQ(b->excluded, 0u);
  for (size_t i = 0; i < a->files.size(); ++i)
    EXPECT_EQ(a->readonly_alias_subvolumes.subvolumes_of(static_cast<uint32_t>(i)),
              b->readonly_alias_subvolumes.subvolumes_of(static_cast<uint32_t>(i)));
}

// The windowed read (a tree too large to hold whole) must find exactly the files and paths
// of the whole scan, whatever the window size, with a nested subvolume, files moved into
// directories made after them, a file below --min-size and one outside the root.
TEST_F(TreeScanTest, WindowedReadFindsTheFilesAndPathsOfTheWholeScan) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir t out && head -c 20000 /dev/urandom > t/early && head -c 100 /dev/urandom > t/tiny"
     " && head -c 20000 /dev/urandom > out/stray && for i in 1 2 3 4 5 6 7; do"
     " head -c 9000 /dev/urandom > t/f$i; done && mkdir -p t/later/sub"
     " && mv t/early t/later/sub/moved && mv out/stray t/later/stray"
     " && btrfs -q subvolume create t/nested && head -c 30000 /dev/urandom > t/nested/inner"
     " && sync");
  ScanOptions o;
  o.min_file_size = 1000;
  auto whole = scan_tree(path("t"), o);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  const auto expected = paths(*whole);
  EXPECT_EQ(expected.size(), 10u);
  EXPECT_TRUE(expected.count("nested/inner"));
  EXPECT_TRUE(expected.count("later/sub/moved"));
  for (size_t window : {1, 3, 100}) {
    ScanResult base;
    auto reader = IncrementalScan::of_roots({path("t")}, o, base);
    ASSERT_TRUE(reader.ok()) << reader.error().message();
    ASSERT_TRUE(*reader);
    std::set<std::string> found;
    size_t windows = 0;
    for (bool more = true; more;) {
      ScanResult w;
      w.roots = base.roots;
      auto next = (*reader)->read_window(w, window);
      ASSERT_TRUE(next.ok()) << next.error().message();
      more = *next;
      EXPECT_LE(w.files.size(), window);
      windows += w.files.empty() ? 0 : 1;
      for (const auto& f : w.files) {
        EXPECT_TRUE(found.insert(relative_path(w, f)).second) << relative_path(w, f);
        EXPECT_EQ(std::count_if(w.extents.begin(), w.extents.end(),
                                [&](const FileExtent& e) { return &w.files[e.file] == &f; }),
                  1);
      }
    }
    EXPECT_EQ(found, expected) << "windows of " << window;
    EXPECT_EQ(windows, (expected.size() + window - 1) / window);
  }
}

// Paths are kept as a tree of names (src/read/path_table.h) and spelled only when asked: each
// must still name the very inode scanned, whatever the names and however deep.
TEST_F(TreeScanTest, PathsSpelledFromTheNameTreeNameTheScannedInode) {
  auto expect_each_names_its_inode = [&](const ScanResult& r) {
    for (const auto& f : r.files) {
      auto fd = open_scanned_file(r, f, true);
      ASSERT_TRUE(fd.ok()) << fd.error().message();
      struct stat st {};
      ASSERT_EQ(::fstat(fd->get(), &st), 0);
      EXPECT_EQ(st.st_ino, f.inode) << relative_path(r, f);
    }
  };
  build_layout("hardlinks", "hl");
  const auto hl = scan("hl");
  ASSERT_EQ(hl.files.size(), 2u);  // three names of one inode, and a separate copy
  expect_each_names_its_inode(hl);

  build_layout("odd-names", "on");
  const auto on = scan("on");
  std::set<std::string> odd;
  for (const std::string name :
       {"with space", " leading and trailing space ", "new\nline", "tab\there", "-leading-dash",
        "invalid-utf8-\xff\xfe", "quotes ' \" and back\\slash", "glob *?[x]{a,b}$HOME",
        "\xc3\xbcn\xc3\xaf\x63\xc3\xb8\x64\xc3\xa9-\xe5\x90\x8d\xe5\x89\x8d",
        "dir\nwith newline/inner.bin"}) {
    odd.insert(name);
    odd.insert("twins/" + name);
  }
  odd.insert("long-" + std::string(250, 'x'));
  odd.insert("twins/long-" + std::string(250, 'x'));
  EXPECT_EQ(paths(on), odd);
  expect_each_names_its_inode(on);

  // Renamed after being written, a nested subvolume, and a path far beyond PATH_MAX
  // (twenty 250-byte directory names), which open_scanned_file opens a step at a time.
  // The deep one is made with short names, renamed deepest first, so no command's path
  // is ever too long.
  const std::string long_name(250, 'd');
  std::string short_dirs = "rn", renames;
  for (int i = 0; i < 20; ++i) short_dirs += "/s";
  for (size_t cut = short_dirs.size(); cut > 2; cut -= 2)
    renames += " && mv " + short_dirs.substr(0, cut) + " " + short_dirs.substr(0, cut - 1) +
               long_name;
  sh("cd " + shell_quote(path("")) +
     " && mkdir -p rn/x && head -c 9000 /dev/urandom > rn/x/f && mkdir rn/y"
     " && mv rn/x rn/y/moved && mv rn/y/moved/f rn/y/moved/g"
     " && btrfs -q subvolume create rn/y/sv && head -c 9000 /dev/urandom > rn/y/sv/h"
     " && mkdir -p " + short_dirs + " && head -c 9000 /dev/urandom > " + short_dirs + "/deep" +
     renames + " && sync");
  const auto rn = scan("rn");
  std::string deep;
  for (int i = 0; i < 20; ++i) deep += long_name + "/";
  deep += "deep";
  EXPECT_GT(deep.size(), size_t{PATH_MAX});
  EXPECT_EQ(paths(rn), (std::set<std::string>{"y/moved/g", "y/sv/h", deep}));
  expect_each_names_its_inode(rn);

  // Scans merged from several roots keep each file's path against its own root.
  auto a = scan_tree(path("rn/y/moved"), {}), b = scan_tree(path("hl"), {});
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<ScanResult> both;
  both.push_back(std::move(*a));
  both.push_back(std::move(*b));
  auto merged = merge_scans(std::move(both));
  ASSERT_TRUE(merged.ok());
  std::set<std::string> absolute;
  for (const auto& f : merged->files) absolute.insert(file_path(*merged, f));
  EXPECT_EQ(absolute.count(path("rn/y/moved/g")), 1u);
  EXPECT_EQ(absolute.size(), 3u);
  expect_each_names_its_inode(*merged);
}

TEST(TreeScanErrors, SaysWhatIsWrong) {
  auto missing = scan_tree("/nonexistent/btrdedupe", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ENOENT);
  EXPECT_NE(missing.error().message().find("/nonexistent/btrdedupe"), std::string::npos);
  auto tmpfs = scan_tree("/dev/shm", {});
  ASSERT_FALSE(tmpfs.ok());
  EXPECT_EQ(tmpfs.error().message(), "/dev/shm is on tmpfs, not btrfs");
}

}  // namespace
}  // namespace btrdedupe::test
