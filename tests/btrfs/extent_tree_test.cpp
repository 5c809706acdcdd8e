// The extent tree as the freed-space figures read it (btrfs/extent_tree.h), on real btrfs.
#include "btrfs/extent_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

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

// Addresses in runs far apart (a gap of over 64 MiB between them, each run searched by
// itself) and single ones: each start of a live extent is found, and the extents of a
// file deleted in the gap, or addresses inside an extent, are not.
TEST_F(ExtentTreeTest, RunsOfAddressesFarApartAreEachFound) {
  auto root = btrfs::Fd::open(path(""), O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(root) << root.error().message();
  const auto write = [&](const std::string& name, int mib_or_zero) {
    const std::string bytes = mib_or_zero ? std::to_string(mib_or_zero) + "M" : "4096";
    sh("cd " + shell_quote(path("")) + " && head -c " + bytes + " /dev/urandom | dd of=" + name +
       " bs=1M oflag=direct iflag=fullblock status=none");
  };
  for (int i = 0; i < 70; ++i) write("near" + std::to_string(i), 0);
  sh("btrfs filesystem sync " + shell_quote(path("")));
  write("gap", 200);
  sh("btrfs filesystem sync " + shell_quote(path("")));
  for (int i = 0; i < 3; ++i) write("far" + std::to_string(i), 0);
  sh("btrfs filesystem sync " + shell_quote(path("")));
  std::vector<std::pair<uint64_t, bool>> want;  // address, allocated
  const auto start_of = [&](const std::string& name) {
    return extents_of(path(name)).at(0).physical;
  };
  for (int i = 0; i < 70; ++i) want.emplace_back(start_of("near" + std::to_string(i)), true);
  for (int i = 0; i < 3; ++i) want.emplace_back(start_of("far" + std::to_string(i)), true);
  for (const auto& e : extents_of(path("gap"))) want.emplace_back(e.physical, false);
  want.emplace_back(want.front().first + 1, false);  // inside an extent: not a start
  sh("rm " + shell_quote(path("gap")) + " && btrfs filesystem sync " + shell_quote(path("")));
  std::sort(want.begin(), want.end());
  uint64_t widest = 0;
  for (size_t i = 1; i < want.size(); ++i)
    widest = std::max(widest, want[i].first - want[i - 1].first);
  ASSERT_GT(widest, 64ULL << 20);
  std::vector<uint64_t> addresses;
  for (const auto& [at, live] : want) addresses.push_back(at);
  auto got = btrfs::extents_allocated(root->get(), addresses);
  ASSERT_TRUE(got) << got.error().message();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ((*got)[i], want[i].second) << "address " << want[i].first;
}

}  // namespace
}  // namespace btrdedupe::test
