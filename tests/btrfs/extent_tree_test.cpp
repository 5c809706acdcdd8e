// The extent tree as the freed-space figures read it (btrfs/extent_tree.h), on real btrfs.
#include "btrfs/extent_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/kernel_test_util.h"

namespace btrdedupe::test {
namespace {

class ExtentTreeTest : public BtrfsTest {};

// An extent counts as the one seen at a generation only if it was allocated by then: an
// item at the same address from a later transaction is a new extent in the space the old
// one freed (a remainder's rewrite can land there), and the old one is gone.
TEST_F(ExtentTreeTest, AnExtentAllocatedAfterAGenerationIsNotTheOneSeenThen) {
  auto root = btrfs::Fd::open(path(""), O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(root) << root.error().message();
  sh("btrfs filesystem sync " + shell_quote(path("")));
  auto before = btrfs::read_fs_info(root->get());
  ASSERT_TRUE(before) << before.error().message();
  ASSERT_GT(before->generation, 0u);
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom | dd of=f bs=1M oflag=direct iflag=fullblock status=none"
     " && btrfs filesystem sync .");
  const auto extents = extents_of(path("f"));
  ASSERT_FALSE(extents.empty());
  const uint64_t at = extents.front().physical;
  auto after = btrfs::read_fs_info(root->get());
  ASSERT_TRUE(after) << after.error().message();
  ASSERT_GT(after->generation, before->generation);

  const uint64_t addresses[] = {at};
  auto any = btrfs::extents_allocated(root->get(), addresses);
  ASSERT_TRUE(any) << any.error().message();
  EXPECT_TRUE((*any)[0]);
  auto by_now = btrfs::extents_allocated(root->get(), addresses, after->generation);
  ASSERT_TRUE(by_now) << by_now.error().message();
  EXPECT_TRUE((*by_now)[0]);
  auto by_then = btrfs::extents_allocated(root->get(), addresses, before->generation);
  ASSERT_TRUE(by_then) << by_then.error().message();
  EXPECT_FALSE((*by_then)[0]);
}

}  // namespace
}  // namespace btrdedupe::test
