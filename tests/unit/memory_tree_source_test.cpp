// The in-memory tree source answers searches as TreeSearch answers them on a real tree
// (compared item for item in tests/btrfs/memory_tree_source_test.cpp).
#include "support/memory_tree_source.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "btrfs/items.h"
#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

using Keys = std::vector<std::tuple<uint64_t, uint8_t, uint64_t>>;

Keys keys_of(btrfs::TreeSource& source, const btrfs::SearchKey& key) {
  Keys out;
  auto cursor = source.search(key, 4096);
  for (;;) {
    auto next = cursor->next();
    EXPECT_TRUE(next.ok()) << next.error().message();
    if (!next.ok() || !*next) break;
    out.emplace_back((*next)->objectid, (*next)->type, (*next)->offset);
  }
  return out;
}

class MemoryTreeSourceTest : public ::testing::Test {
 protected:
  MemoryTreeSourceTest() {
    tree.file(257, 256, "a", 8192);
    tree.extent(257, 0, 4096, 1 << 20);
    tree.extent(257, 4096, 4096, 2 << 20);
    tree.xattr(257);
    tree.generation = 20;
    tree.file(258, 256, "b", 4096);
    tree.extent(258, 0, 4096, 3 << 20);
  }
  MemoryTreeSource source{5};
  SyntheticTree tree{source, 5};
};

TEST_F(MemoryTreeSourceTest, TheBoxAppliesToEachFieldNotOnlyToTheKeyInterval) {
  btrfs::SearchKey key;
  key.tree_id = 5;
  key.min_objectid = 257;
  key.max_objectid = 258;
  key.min_type = key.max_type = BTRFS_EXTENT_DATA_KEY;
  key.min_offset = 0;
  key.max_offset = 0;
  // The 136-bit interval (257 108 0)..(258 108 0) also holds 257's extent at 4096 and 258's
  // inode item; the box does not.
  EXPECT_EQ(keys_of(source, key),
            (Keys{{257, BTRFS_EXTENT_DATA_KEY, 0}, {258, BTRFS_EXTENT_DATA_KEY, 0}}));
  // The probe is the kernel's: the first key of the interval, whatever its type.
  key.min_objectid = 257;
  key.min_type = BTRFS_XATTR_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  auto first = source.first_key(key);
  ASSERT_TRUE(first.ok() && *first);
  EXPECT_EQ((*first)->type, BTRFS_XATTR_ITEM_KEY);
  key.min_objectid = 259;
  key.max_objectid = 300;
  first = source.first_key(key);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(*first);
}

TEST_F(MemoryTreeSourceTest, MinTransidDropsOldLeavesAndOldItemsOfNewLeaves) {
  btrfs::SearchKey key;
  key.tree_id = 0;  // the default tree, 5
  key.min_objectid = 257;
  key.max_objectid = 258;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  key.min_transid = 15;
  // 257's items are of generation 10 (their leaves too): gone. 258's name has no
  // generation of its own, and its leaf's defaults to 0: gone too.
  EXPECT_EQ(keys_of(source, key),
            (Keys{{258, BTRFS_INODE_ITEM_KEY, 0}, {258, BTRFS_EXTENT_DATA_KEY, 0}}));
  // An old item in a leaf written later comes back from the kernel; TreeSearch drops it.
  btrfs::InodeItem old;
  old.transid = 10;
  source.add(5, {259, BTRFS_INODE_ITEM_KEY, 0}, btrfs::encode_inode_item(old), 30);
  source.add(5, {259, BTRFS_INODE_REF_KEY, 256}, {1, 2, 3}, 30);
  key.max_objectid = 259;
  EXPECT_EQ(keys_of(source, key), (Keys{{258, BTRFS_INODE_ITEM_KEY, 0},
                                        {258, BTRFS_EXTENT_DATA_KEY, 0},
                                        {259, BTRFS_INODE_REF_KEY, 256}}));
  // max_transid leaves out whole leaves written later.
  key.min_transid = 0;
  key.max_transid = 25;
  EXPECT_EQ(keys_of(source, key).size(), 8u);  // 257: 5 items, 258: 3
}

TEST_F(MemoryTreeSourceTest, ATreeWithoutItemsIsEnoent) {
  btrfs::SearchKey key;
  key.tree_id = 999;
  auto next = source.search(key, 4096)->next();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code, ENOENT);
  EXPECT_EQ(source.first_key(key).error().code, ENOENT);
  EXPECT_EQ(source.searches(), 1u);
  EXPECT_EQ(source.probes(), 1u);
}

}  // namespace
}  // namespace btrdedupe::test
