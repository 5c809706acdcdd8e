// btrfs::open_inode: the right file, or an error; never another file.
#include "btrfs/open_inode.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "btrfs/subvolume.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/kernel_test_util.h"

namespace btrdedupe::test {
namespace {

class OpenInodeTest : public BtrfsTest {
 protected:
  // Subvolume s holding d/f ("alpha"), and its root fd and id.
  void SetUp() override {
    BtrfsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    sh("cd " + shell_quote(path("")) +
       " && btrfs -q subvolume create s && mkdir s/d && printf alpha > s/d/f");
    root_ = open_or_fail(path("s"), O_RDONLY | O_DIRECTORY);
    auto id = btrfs::subvolume_id(root_.get());
    ASSERT_TRUE(id.ok()) << id.error().message();
    subvol_ = *id;
    ino_ = inode_of(path("s/d/f"));
  }

  // The root fd must close before the harness unmounts, or the unmount waits on EBUSY.
  void TearDown() override {
    root_.reset();
    BtrfsTest::TearDown();
  }

  std::string content(int fd) {
    char buf[64] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    EXPECT_GE(n, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  btrfs::Fd root_;
  uint64_t subvol_ = 0;
  uint64_t ino_ = 0;
};

TEST_F(OpenInodeTest, OpensTheRightFile) {
  std::string used;
  auto fd = btrfs::open_inode(root_.get(), {subvol_, ino_}, O_RDONLY, &used);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  EXPECT_EQ(used, "d/f");
  struct stat st {};
  ASSERT_EQ(::fstat(fd->get(), &st), 0);
  EXPECT_EQ(st.st_ino, ino_);
  EXPECT_EQ(content(fd->get()), "alpha");
  EXPECT_NE(::fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(OpenInodeTest, HonoursTheFlags) {
  auto fd = btrfs::open_inode(root_.get(), {subvol_, ino_}, O_RDWR);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  EXPECT_EQ(::fcntl(fd->get(), F_GETFL) & O_ACCMODE, O_RDWR);
}

TEST_F(OpenInodeTest, UsesAnotherHardlinkWhenTheFirstNameIsGone) {
  sh("cd " + shell_quote(path("s")) + " && mkdir e && ln d/f e/g && rm d/f");
  std::string used;
  auto fd = btrfs::open_inode(root_.get(), {subvol_, ino_}, O_RDONLY, &used);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  EXPECT_EQ(used, "e/g");
  EXPECT_EQ(content(fd->get()), "alpha");
}

TEST_F(OpenInodeTest, DeletedFileIsENOENT) {
  sh("rm " + shell_quote(path("s/d/f")));
  auto fd = btrfs::open_inode(root_.get(), {subvol_, ino_}, O_RDONLY);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code, ENOENT);
  EXPECT_NE(fd.error().context.find("inode " + std::to_string(ino_)), std::string::npos);
}

TEST_F(OpenInodeTest, FileRenamedOverByAnotherIsNotOpened) {
  sh("cd " + shell_quote(path("s")) + " && printf beta > d/other && mv d/other d/f");
  ASSERT_NE(inode_of(path("s/d/f")), ino_);
  auto fd = btrfs::open_inode(root_.get(), {subvol_, ino_}, O_RDONLY);
  ASSERT_FALSE(fd.ok()) << "opened a file with content " << content(fd->get());
  EXPECT_TRUE(fd.error().code == ENOENT || fd.error().code == ESTALE) << fd.error().message();
}

TEST_F(OpenInodeTest, WrongSubvolumeIsESTALE) {
  // Subvolume t has the same layout, so the same inode numbers: the id must tell them apart.
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create t && mkdir t/d && printf gamma > t/d/f");
  ASSERT_EQ(inode_of(path("t/d/f")), ino_);
  auto t_root = open_or_fail(path("t"), O_RDONLY | O_DIRECTORY);
  auto t_id = btrfs::subvolume_id(t_root.get());
  ASSERT_TRUE(t_id.ok());

  auto fd = btrfs::open_inode(root_.get(), {*t_id, ino_}, O_RDONLY);
  ASSERT_FALSE(fd.ok()) << "opened a file with content " << content(fd->get());
  EXPECT_EQ(fd.error().code, ESTALE) << fd.error().message();

  auto top = open_or_fail(path(""), O_RDONLY | O_DIRECTORY);
  auto from_top = btrfs::open_inode(top.get(), {subvol_, ino_}, O_RDONLY);
  ASSERT_FALSE(from_top.ok());
  EXPECT_EQ(from_top.error().code, ESTALE) << from_top.error().message();
}

// A bind mount puts another subvolume's file, with the very same inode number, at the path
// INO_PATHS gives: only the device and subvolume checks can tell.
TEST_F(OpenInodeTest, SameInodeNumberFromAnotherSubvolumeAtThePathIsESTALE) {
  sh("cd " + shell_quote(path("")) +
     " && btrfs -q subvolume create t && mkdir t/d && printf gamma > t/d/f" +
     " && mount --bind t/d/f s/d/f");
  ASSERT_EQ(inode_of(path("s/d/f")), ino_);
  bool opened = false;
  int code = 0;
  std::string got;
  {
    auto fd = btrfs::open_inode(root_.get(), {subvol_, ino_}, O_RDONLY);
    opened = fd.ok();
    if (opened) got = content(fd->get());
    else code = fd.error().code;
  }  // closed before the unmount
  sh("umount " + shell_quote(path("s/d/f")));
  EXPECT_FALSE(opened) << "opened a file with content " << got;
  EXPECT_EQ(code, ESTALE);
}

TEST_F(OpenInodeTest, FdThatIsNotASubvolumeRootIsEINVAL) {
  auto dir = open_or_fail(path("s/d"), O_RDONLY | O_DIRECTORY);
  auto fd = btrfs::open_inode(dir.get(), {subvol_, ino_}, O_RDONLY);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code, EINVAL);
}

}  // namespace
}  // namespace btrdedupe::test
