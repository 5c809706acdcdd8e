// The test harness itself: a real image is mounted, and nothing outlives it.
#include <fcntl.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

bool mounted_at(const std::string& mount_point) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, mp, type, rest;
  while (in >> dev >> mp >> type && std::getline(in, rest))
    if (mp == mount_point && type == "btrfs") return true;
  return false;
}

std::string loop_backing_file(const std::string& device) {
  const std::string name = std::filesystem::path(device).filename();
  std::ifstream in("/sys/block/" + name + "/loop/backing_file");
  std::string file;
  std::getline(in, file);
  return file;
}

using Harness = BtrfsTest;

TEST_F(Harness, MountsARealBtrfsOnALoopDevice) {
  EXPECT_TRUE(mounted_at(fs().mount_point()));
  EXPECT_EQ(loop_backing_file(fs().device()), fs().image_file());
  auto fd = btrfs::Fd::open(fs().mount_point(), O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  EXPECT_TRUE(btrfs::check_is_btrfs(fd->get(), fs().mount_point()).ok());
}

TEST(HarnessTeardown, RemovesMountLoopDeviceAndImage) {
  std::string why;
  auto image = BtrfsImage::create({}, &why);
  ASSERT_TRUE(image) << why;
  const std::string mp = image->mount_point(), dev = image->device(), file = image->image_file();
  ASSERT_TRUE(mounted_at(mp));
  image.reset();
  EXPECT_FALSE(mounted_at(mp));
  EXPECT_FALSE(std::filesystem::exists(file));
  // The autoclear loop device is gone or reused by another image, never still on our file.
  EXPECT_NE(loop_backing_file(dev), file);
}

TEST(HarnessTeardown, ACrashedTestProcessLeavesNothingMounted) {
  // A child process in its own mount namespace creates an image and dies by SIGKILL.
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe");
  const auto child =
      run_command("BTRDEDUPE_HARNESS_CRASH_CHILD=1 " + shell_quote(exe) + "; echo exit=$?");
  ASSERT_NE(child.output.find("mounted "), std::string::npos) << child.output;
  const auto start = child.output.find("mounted ") + 8;
  const std::string image = child.output.substr(start, child.output.find('\n', start) - start);
  EXPECT_NE(child.output.find("exit=137"), std::string::npos) << child.output;
  // Its loop device went with its namespace; the next harness start removes its image.
  // The kernel tears a dead namespace's mounts down asynchronously: allow it a few seconds.
  std::string attached;
  for (int i = 0; i < 100; ++i) {
    attached = run_command("losetup -j " + shell_quote(image)).output;
    if (attached.empty()) break;
    ::usleep(100 * 1000);
  }
  EXPECT_EQ(attached, "");
  remove_stale_work_dirs();
  EXPECT_FALSE(std::filesystem::exists(image));
}

}  // namespace
}  // namespace btrdedupe::test
