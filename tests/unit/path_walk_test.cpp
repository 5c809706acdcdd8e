// The walk of the paths (walk_root) over a real temporary directory, with a scripted
// kernel saying btrfs or XFS, each file's FIEMAP map and the subvolumes: which entries
// become files, what each FIEMAP extent becomes, and what the walk counts as passed over.
#include "src/read/path_walk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "src/read/scanned_file.h"
#include "tests/unit/scripted_walk_kernel.h"

namespace btrdedupe {
namespace {

using test::mapped;
using test::ScriptedWalkKernel;

constexpr uint64_t kP1 = 1 << 20, kP2 = 2 << 20, kP3 = 3 << 20, kP4 = 4 << 20, kP5 = 5 << 20;

class PathWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/btrdedupe-walk-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string p(const std::string& name) const { return dir_ + "/" + name; }
  uint64_t inode(const std::string& name) const {
    struct stat st {};
    EXPECT_EQ(::lstat(p(name).c_str(), &st), 0) << name;
    return st.st_ino;
  }
  // A file of `bytes` bytes whose FIEMAP map is `map`.
  void file(const std::string& name, uint64_t bytes, std::vector<btrfs::FiemapExtent> map) {
    std::ofstream(p(name)) << std::string(bytes, 'x');
    kernel.extents_of_inode[inode(name)] = std::move(map);
  }
  // The tree every test walks (a file's map says what FIEMAP tells of it):
  //   plain           8 KiB, one extent at P1
  //   sub/shared      8 KiB, the same extent, SHARED
  //   sub/packed      16 KiB, one compressed extent at P2 in two pieces
  //   sub/deep/sparse 16 KiB: 4 KiB at P3, a hole, 4 KiB prealloc at P4, 4 KiB delalloc
  //   tiny            100 bytes inline
  //   nomap           4 KiB that FIEMAP does not map (it fails)
  //   hard1, hard2    one inode of 8 KiB at P5
  //   link, dirlink, fifo: a symlink to plain, one to sub, a fifo: never files
  void make_tree() {
    std::filesystem::create_directories(p("sub/deep"));
    file("plain", 8192, {mapped(0, kP1, 8192, FIEMAP_EXTENT_LAST)});
    file("sub/shared", 8192, {mapped(0, kP1, 8192, FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_LAST)});
    file("sub/packed", 16384,
         {mapped(0, kP2, 8192, FIEMAP_EXTENT_ENCODED),
          mapped(8192, kP2, 8192, FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_LAST)});
    file("sub/deep/sparse", 16384,
         {mapped(0, kP3, 4096), mapped(8192, kP4, 4096, FIEMAP_EXTENT_UNWRITTEN),
          mapped(12288, 0, 4096, FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN |
                                     FIEMAP_EXTENT_LAST)});
    file("tiny", 100,
         {mapped(0, 0, 100, FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED |
                                FIEMAP_EXTENT_LAST)});
    std::ofstream(p("nomap")) << std::string(4096, 'x');
    file("hard1", 8192, {mapped(0, kP5, 8192, FIEMAP_EXTENT_LAST)});
    std::filesystem::create_hard_link(p("hard1"), p("hard2"));
    std::filesystem::create_symlink(p("plain"), p("link"));
    std::filesystem::create_directory_symlink(p("sub"), p("dirlink"));
    ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
  }

  btrfs::Result<ScanResult> walk(const ScanOptions& o = {}) { return walk_root(dir_, o, kernel); }

  // Each file by its path relative to the root.
  static std::map<std::string, const ScannedFile*> by_path(const ScanResult& r) {
    std::map<std::string, const ScannedFile*> out;
    for (const auto& f : r.files) out[relative_path(r, f)] = &f;
    return out;
  }

  ScriptedWalkKernel kernel;
  std::string dir_;
};

TEST_F(PathWalkTest, RegularFilesAreTakenOnceWithTheirStatAndNoDataSum) {
  make_tree();
  kernel.subvolume_of_inode[inode("")] = {256, true};
  auto r = walk();
  ASSERT_TRUE(r) << r.error().message();
  const auto files = by_path(*r);
  std::vector<std::string> names;
  for (const auto& [name, f] : files) names.push_back(name);
  // One of the two names of the hard-linked inode, whichever the listing gave first.
  const std::string hard = files.count("hard1") ? "hard1" : "hard2";
  EXPECT_EQ(names, (std::vector<std::string>{hard, "plain", "sub/deep/sparse", "sub/packed",
                                             "sub/shared", "tiny"}));
  for (const auto& [name, f] : files) {
    struct stat st {};
    ASSERT_EQ(::lstat(p(name).c_str(), &st), 0);
    EXPECT_EQ(f->inode, st.st_ino) << name;
    EXPECT_EQ(f->size, static_cast<uint64_t>(st.st_size)) << name;
    EXPECT_EQ(f->mtime_sec, st.st_mtim.tv_sec) << name;
    EXPECT_EQ(f->mtime_nsec, static_cast<uint32_t>(st.st_mtim.tv_nsec)) << name;
    EXPECT_TRUE(f->nodatasum()) << name;  // no csum tree: the fingerprint reads the data
    EXPECT_EQ(f->subvolume, 256u) << name;
    EXPECT_FALSE(f->not_ours) << name;  // the walker's own files
    const std::string dir = std::filesystem::path(name).parent_path().string();
    EXPECT_EQ(f->parent, inode(dir)) << name;
    EXPECT_EQ(f->inline_data, name == "tiny") << name;
  }
  EXPECT_EQ(r->passed_over.unreadable, 1u);  // nomap
  EXPECT_EQ(r->passed_over.not_ours_files, 0u);
  ASSERT_EQ(r->subvolumes.size(), 1u);
  EXPECT_EQ(r->subvolumes[0].id, 256u);
  EXPECT_TRUE(r->subvolumes[0].readonly);
  EXPECT_EQ(r->fs.fsid, test::walked_info(1).fsid);
  ASSERT_EQ(r->roots.size(), 1u);
  EXPECT_EQ(r->roots[0].path, dir_);
  EXPECT_FALSE(r->roots[0].is_file);
}

// SHARED and ENCODED extents may have references outside the walk; a compressed extent's
// pieces are told apart by their file offset; holes, prealloc, delalloc and inline data are
// no extents to dedupe.
TEST_F(PathWalkTest, FiemapExtentsBecomeFileExtentsByTheirFlags) {
  make_tree();
  auto r = walk();
  ASSERT_TRUE(r) << r.error().message();
  std::map<uint32_t, std::string> name_of;
  for (uint32_t i = 0; i < r->files.size(); ++i) name_of[i] = relative_path(*r, r->files[i]);
  using Row = std::tuple<uint64_t, uint64_t, std::string, uint64_t, uint64_t, bool>;
  std::vector<Row> got;  // (bytenr, extent offset, file, file offset, length, refs unknown)
  for (const auto& x : r->extents) {
    EXPECT_EQ(x.disk_num_bytes, x.length);
    got.emplace_back(x.disk_bytenr, x.extent_offset, name_of[x.file], x.file_offset, x.length,
                     x.refs_unknown);
  }
  const std::string hard = by_path(*r).count("hard1") ? "hard1" : "hard2";
  std::vector<Row> want{{kP1, 0, "plain", 0, 8192, false},
                        {kP1, 0, "sub/shared", 0, 8192, true},
                        {kP2, 0, "sub/packed", 0, 8192, true},
                        {kP2, 8192, "sub/packed", 8192, 8192, true},
                        {kP3, 0, "sub/deep/sparse", 0, 4096, false},
                        {kP5, 0, hard, 0, 8192, false}};
  // The scan's order: by physical identity, then by file index.
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_TRUE(std::is_sorted(r->extents.begin(), r->extents.end(), [](const auto& a, const auto& b) {
    return std::tie(a.disk_bytenr, a.extent_offset) < std::tie(b.disk_bytenr, b.extent_offset);
  }));
  const PassedOver& passed = r->passed_over;
  EXPECT_EQ(passed.inline_extents, 1u);
  EXPECT_EQ(passed.inline_bytes, 100u);
  EXPECT_EQ(passed.prealloc_extents, 1u);
  EXPECT_EQ(passed.prealloc_bytes, 4096u);
  EXPECT_EQ(passed.prealloc_bytenrs, std::vector<uint64_t>{kP4});
  EXPECT_EQ(passed.hole_extents, 0u);  // FIEMAP tells no holes: they are the gaps
}

// XFS has one tree: no subvolume is asked, every file is named as in btrfs's top level.
TEST_F(PathWalkTest, XfsFilesLieInOneTreeAndNoSubvolumeIsAsked) {
  make_tree();
  kernel.kind = btrfs::FsKind::Xfs;
  kernel.subvolume_of_inode[inode("")] = {256, true};
  auto r = walk();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(kernel.subvolume_asked_on.empty());
  ASSERT_EQ(r->subvolumes.size(), 1u);
  EXPECT_EQ(r->subvolumes[0].id, 5u);
  EXPECT_FALSE(r->subvolumes[0].readonly);
  EXPECT_EQ(r->files.size(), 6u);
  for (const auto& f : r->files) EXPECT_EQ(f.subvolume, 5u);
}

// A btrfs whose subvolume ioctls fail (an old kernel): the top level, writable.
TEST_F(PathWalkTest, BtrfsWithoutSubvolumeAnswersIsTheTopLevel) {
  make_tree();
  auto r = walk();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(kernel.subvolume_asked_on.empty());
  ASSERT_EQ(r->subvolumes.size(), 1u);
  EXPECT_EQ(r->subvolumes[0].id, 5u);
  EXPECT_FALSE(r->subvolumes[0].readonly);
}

// A root naming one file: that file, with no directory and no path below the root.
TEST_F(PathWalkTest, ARootThatIsAFileIsWalkedAlone) {
  make_tree();
  kernel.subvolume_of_inode[inode("sub/packed")] = {300, false};
  auto r = walk_root(p("sub/packed"), {}, kernel);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->roots.size(), 1u);
  EXPECT_TRUE(r->roots[0].is_file);
  ASSERT_EQ(r->files.size(), 1u);
  const ScannedFile& f = r->files[0];
  EXPECT_EQ(f.inode, inode("sub/packed"));
  EXPECT_EQ(f.parent, 0u);
  EXPECT_EQ(f.path_node, PathTable::kRoot);
  EXPECT_EQ(file_path(*r, f), p("sub/packed"));
  EXPECT_EQ(f.subvolume, 300u);
  EXPECT_EQ(r->extents.size(), 2u);
}

// --exclude before --min-size: an excluded small file counts as excluded; a hard link's
// second name is not a second file; the confirmation's walk keeps no paths.
TEST_F(PathWalkTest, ExcludeAndMinSizeLeaveFilesOutAndCountThem) {
  make_tree();
  ScanOptions o;
  o.exclude = [&](const std::string& root, const std::string& rel) {
    EXPECT_EQ(root, dir_);
    return rel.rfind("sub/", 0) == 0;
  };
  o.min_file_size = 5000;
  o.keep_paths = false;
  auto r = walk(o);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->excluded, 3u);                   // sub/shared, sub/packed, sub/deep/sparse
  EXPECT_EQ(r->passed_over.excluded_files, 2u);  // tiny, nomap
  EXPECT_EQ(r->passed_over.unreadable, 0u);      // nomap was never opened
  std::set<uint64_t> inodes;
  for (const auto& f : r->files) {
    inodes.insert(f.inode);
    EXPECT_EQ(f.path_node, PathTable::kRoot);
  }
  EXPECT_EQ(inodes, (std::set<uint64_t>{inode("plain"), inode("hard1")}));
  EXPECT_EQ(r->paths.size(), 0u);  // no name kept
}

TEST_F(PathWalkTest, MoreFilesThanTheCapEndTheWalkWithEfbig) {
  make_tree();
  ScanOptions o;
  o.max_files = 3;
  auto r = walk(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EFBIG);
  EXPECT_EQ(r.error().message(), "more than 3 files: " + std::string(std::strerror(EFBIG)));
}

TEST_F(PathWalkTest, AFilesystemItDoesNotReadIsRefusedByName) {
  make_tree();
  kernel.kind = btrfs::FsKind::Other;
  auto r = walk();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), dir_ + " is on ext2/ext3: btrdedupe reads btrfs and XFS");
  kernel.kind_fails = true;
  r = walk();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "statfs " + dir_ + ": " + std::strerror(EIO));
}

TEST_F(PathWalkTest, ARootItCannotOpenOrIdentifyIsAnError) {
  auto r = walk_root(p("missing"), {}, kernel);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
  kernel.info.reset();
  r = walk();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTTY);
}

// The machine's kernel: a directory on neither btrfs nor XFS is refused with statfs's name
// for its filesystem.
TEST_F(PathWalkTest, TheMachineKernelRefusesAnotherFilesystem) {
  std::string name;
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  auto kind = btrfs::filesystem_kind(fd, &name);
  ::close(fd);
  ASSERT_TRUE(kind);
  if (*kind != btrfs::FsKind::Other) GTEST_SKIP() << dir_ << " is on btrfs or XFS";
  auto r = walk_root(dir_, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), dir_ + " is on " + name + ": btrdedupe reads btrfs and XFS");
}

}  // namespace
}  // namespace btrdedupe
