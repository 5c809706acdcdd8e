// Which reader a run takes (choose_reader), and what a walk's run counts as freed
// (kernel_walked's still_allocated): both without a filesystem.
#include "src/read/root_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "btrfs/tree_source.h"
#include "src/read/incremental_scan.h"
#include "src/read/scan_scope.h"
#include "src/run/run_kernel.h"
#include "tests/unit/scripted_walk_kernel.h"

namespace btrdedupe {
namespace {

ReaderGround ground(btrfs::FsKind fs, bool root) {
  ReaderGround g;
  g.fs = fs;
  g.fs_name = fs == btrfs::FsKind::Other ? "ext2/ext3/ext4" : "";
  g.may_search_trees = root;
  return g;
}

TEST(ChooseReader, TreesWhereTreeSearchIsAllowedPathsOtherwise) {
  auto c = choose_reader(ground(btrfs::FsKind::Btrfs, true), "/p", std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Tree);
  EXPECT_EQ(c->note, "");
  c = choose_reader(ground(btrfs::FsKind::Btrfs, false), "/p", std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Paths);
  EXPECT_NE(c->note.find("tree search needs root"), std::string::npos) << c->note;
  EXPECT_NE(c->note.find("only files you may write"), std::string::npos) << c->note;
  c = choose_reader(ground(btrfs::FsKind::Xfs, true), "/p", std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Paths);
  EXPECT_NE(c->note.find("xfs has no trees to search"), std::string::npos) << c->note;
  EXPECT_EQ(c->note.find("only files you may write"), std::string::npos) << c->note;
}

TEST(ChooseReader, ForcedWhereItCanRun) {
  auto c = choose_reader(ground(btrfs::FsKind::Btrfs, true), "/p", ReaderKind::Paths);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Paths);
  EXPECT_EQ(c->note, "") << "asked for: no note";
  // Not root: the tree scan that follows says it needs root.
  c = choose_reader(ground(btrfs::FsKind::Btrfs, false), "/p", ReaderKind::Tree);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, ReaderKind::Tree);
  c = choose_reader(ground(btrfs::FsKind::Xfs, true), "/p", ReaderKind::Tree);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "/p is on xfs, which has no trees to search: use --reader=paths");
}

TEST(ChooseReader, OtherFilesystemsAreNamed) {
  const auto c = choose_reader(ground(btrfs::FsKind::Other, true), "/p", ReaderKind::Paths);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "/p is on ext2/ext3/ext4: btrdedupe dedupes on btrfs and XFS");
}

FileExtent mapped(uint64_t at, uint64_t length) {
  FileExtent e;
  e.disk_bytenr = at;
  e.length = length;
  e.disk_num_bytes = length;
  return e;
}

PhysicalExtent destination(uint64_t at, uint64_t bytes, bool refs_unknown = false) {
  PhysicalExtent x;
  x.bytenr = at;
  x.disk_bytes = bytes;
  x.refs_unknown = refs_unknown;
  return x;
}

TEST(WalkedKernel, AnExtentStaysWhileAnyOfItsBytesIsMappedOrItsReferencesAreUnknown) {
  ScanResult now;  // after the dedupe: what the files map
  now.extents = {mapped(0, 4096), mapped(1 << 20, 8192), mapped(1 << 21, 4096)};
  const std::vector<PhysicalExtent> planned = {
      destination(0, 4096),                  // still mapped: kept
      destination(4096, 8192),               // mapped by no file: freed
      destination((1 << 20) + 4096, 65536),  // its first bytes still mapped (a bookend)
      destination((1 << 20) - 4096, 4096),   // ends where a mapped range starts: freed
      destination(1 << 22, 4096, true),      // FIEMAP said SHARED: may be held outside
  };
  auto allocated = kernel_walked().still_allocated(now, planned, 0);
  ASSERT_TRUE(allocated);
  EXPECT_EQ(*allocated, (std::vector<bool>{true, false, true, false, true}));
}

// CAP_SYS_ADMIN as /proc/self/status spells the effective set, in hex.
bool effective_sys_admin() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("CapEff:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> 21) & 1;
  return false;
}

TEST(ReaderGround, TheFilesystemKindAndTheCapabilityOfTheCaller) {
  const int fd = ::open("/tmp", O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  struct statfs st {};
  ASSERT_EQ(::fstatfs(fd, &st), 0);
  const ReaderGround g = reader_ground(fd);
  ::close(fd);
  const auto magic = static_cast<unsigned long>(st.f_type);
  EXPECT_EQ(g.fs, magic == BTRFS_SUPER_MAGIC ? btrfs::FsKind::Btrfs
                  : magic == XFS_SUPER_MAGIC ? btrfs::FsKind::Xfs
                                             : btrfs::FsKind::Other);
  if (g.fs == btrfs::FsKind::Other) {
    EXPECT_NE(g.fs_name, "");
  }
  EXPECT_EQ(g.may_search_trees, effective_sys_admin());
}

// The walk's reader: its kernel names the filesystem; no generations, no checksums, no
// targeted reads (every run walks whole).
TEST(PathReader, TheWalksFilesystemAndWhatItCannotTell) {
  test::ScriptedWalkKernel kernel;
  kernel.kind = btrfs::FsKind::Xfs;
  const auto reader = path_reader(kernel);
  EXPECT_EQ(reader->kind(), ReaderKind::Paths);
  EXPECT_EQ(reader_of(ReaderKind::Paths).kind(), ReaderKind::Paths);
  auto fsid = reader->fsid("/tmp");
  ASSERT_TRUE(fsid) << fsid.error().message();
  EXPECT_EQ(*fsid, test::walked_info(1).fsid_string());
  EXPECT_FALSE(reader->fsid("/tmp/no such path/really"));
  kernel.kind_fails = true;
  fsid = reader->fsid("/tmp");
  ASSERT_FALSE(fsid);
  EXPECT_EQ(fsid.error().message().rfind("statfs /tmp", 0), 0u) << fsid.error().message();
  auto generations = reader->generations("/tmp");
  ASSERT_TRUE(generations);
  EXPECT_TRUE(generations->empty());
  btrfs::TreeSource* sums = reader->checksums();
  ASSERT_NE(sums, nullptr);  // an empty csum tree, not the kernel's
  btrfs::SearchKey all;
  auto cursor = sums->search(all, 16);
  auto item = cursor->next();
  ASSERT_TRUE(item);
  EXPECT_FALSE(*item);
  EXPECT_EQ(cursor->ioctl_calls(), 0u);
  auto first = sums->first_key(all);
  ASSERT_TRUE(first);
  EXPECT_FALSE(*first);
  ScanResult out;
  auto targeted = reader->targeted(ScanScope{{"/tmp"}, std::nullopt}, ScanOptions{}, out);
  ASSERT_TRUE(targeted);
  EXPECT_EQ(*targeted, nullptr);
}

}  // namespace
}  // namespace btrdedupe
