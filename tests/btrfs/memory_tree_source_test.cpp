// The in-memory tree source of the unit tests against the kernel: a real subvolume tree
// copied into one gives every search the items TreeSearch gives, and every probe the key
// first_item_key gives. What makes a unit test over the fake say something of the kernel.
#include "support/memory_tree_source.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "btrfs/tree_source.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tree_search_helpers.h"

namespace btrdedupe::test {
namespace {

class MemoryTreeSourceVsKernel : public BtrfsTest {
 protected:
  void commit() { sh("btrfs filesystem sync " + shell_quote(fs().mount_point())); }
  // Every item of the mount's subvolume tree, each with its leaf's generation.
  void copy_tree(int fd, MemoryTreeSource& into) {
    for (auto& item : search_all(fd, btrfs::SearchKey{}).items)
      into.add(BTRFS_FS_TREE_OBJECTID, {item.objectid, item.type, item.offset},
               std::move(item.data), item.transid);
  }
  std::vector<OwnedItem> search_fake(btrfs::TreeSource& source, const btrfs::SearchKey& key) {
    std::vector<OwnedItem> out;
    auto cursor = source.search(key, 4096);
    for (;;) {
      auto next = cursor->next();
      EXPECT_TRUE(next.ok()) << next.error().message();
      if (!next.ok() || !*next) break;
      const auto& it = **next;
      out.push_back({it.objectid, it.type, it.offset, it.transid, {it.data.begin(), it.data.end()}});
    }
    return out;
  }
};

TEST_F(MemoryTreeSourceVsKernel, EveryBoxAndProbeAnswersAsTheKernelDoes) {
  const std::string root = shell_quote(path(""));
  sh("cd " + root + " && mkdir -p d/e && for i in 1 2 3 4 5 6; do head -c $((i * 5000)) "
     "/dev/urandom > d/f$i; done && echo tiny > d/e/t && ln d/f1 d/e/link && truncate -s 1M "
     "d/e/sparse && setfattr -n user.x -v y d/f2 && fallocate -l 64K d/pre && for i in $(seq 300); do echo $i > d/e/s$i; done");
  commit();
  auto fd = open_or_fail(fs().mount_point(), O_RDONLY | O_DIRECTORY);
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  const uint64_t before = info->generation;
  sh("cd " + root + " && head -c 7000 /dev/urandom > d/new && touch d/f3 && echo more >> d/f4 && echo x > d/e/s150");
  commit();
  MemoryTreeSource fake;
  copy_tree(fd.get(), fake);
  ASSERT_GT(fake.items(BTRFS_FS_TREE_OBJECTID), 40u);

  std::vector<btrfs::SearchKey> boxes;
  auto box = [&](uint64_t lo, uint64_t hi, uint8_t tlo, uint8_t thi, uint64_t olo = 0,
                 uint64_t ohi = btrfs::kMaxU64, uint64_t min_transid = 0) {
    btrfs::SearchKey k;
    k.tree_id = BTRFS_FS_TREE_OBJECTID;
    k.min_objectid = lo;
    k.max_objectid = hi;
    k.min_type = tlo;
    k.max_type = thi;
    k.min_offset = olo;
    k.max_offset = ohi;
    k.min_transid = min_transid;
    boxes.push_back(k);
  };
  box(BTRFS_FIRST_FREE_OBJECTID, BTRFS_LAST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY,
      BTRFS_EXTENT_DATA_KEY);  // read_subvolume_tree's
  box(257, 262, BTRFS_EXTENT_DATA_KEY, BTRFS_EXTENT_DATA_KEY, 4096, 1 << 20);
  box(256, 300, BTRFS_DIR_INDEX_KEY, BTRFS_DIR_INDEX_KEY, 3, 5);
  box(258, 258, BTRFS_INODE_ITEM_KEY, BTRFS_EXTENT_DATA_KEY);  // SubvolumeInodes::read
  box(0, btrfs::kMaxU64, BTRFS_INODE_ITEM_KEY, BTRFS_INODE_ITEM_KEY, 0, btrfs::kMaxU64,
      before + 1);  // changed_inodes
  box(BTRFS_FIRST_FREE_OBJECTID, BTRFS_LAST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY,
      BTRFS_EXTENT_DATA_KEY, 0, btrfs::kMaxU64, before + 1);
  btrfs::KernelTreeSource kernel(fd.get());
  for (const auto& k : boxes) {
    SCOPED_TRACE("box " + std::to_string(k.min_objectid) + ".." + std::to_string(k.max_objectid) +
                 " types " + std::to_string(k.min_type) + ".." + std::to_string(k.max_type) +
                 " transid " + std::to_string(k.min_transid));
    const auto real = search_all(fd.get(), k, 4096).items;
    EXPECT_FALSE(real.empty());
    EXPECT_EQ(search_fake(fake, k), real);
    EXPECT_EQ(search_fake(kernel, k), real);  // the kernel source is TreeSearch
    for (uint64_t from : {uint64_t{0}, uint64_t{257}, uint64_t{259}, uint64_t{400}}) {
      btrfs::SearchKey probe = k;
      probe.min_objectid = std::max(from, k.min_objectid);
      auto a = btrfs::first_item_key(fd.get(), probe);
      auto b = fake.first_key(probe);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->has_value(), b->has_value()) << from;
      if (*a) {
        EXPECT_EQ((*a)->objectid, (*b)->objectid) << from;
        EXPECT_EQ((*a)->type, (*b)->type) << from;
        EXPECT_EQ((*a)->offset, (*b)->offset) << from;
      }
    }
  }
}

}  // namespace
}  // namespace btrdedupe::test
