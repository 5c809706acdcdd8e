// A btrfs::TreeSource over items held in memory: the readers' rules tested without a disk.
//
// Not a btrfs: no leaves, nodes or checks; a sorted set of raw items per tree id, answered
// with the semantics of the kernel's tree search as TreeSearch exposes them (the
// cross-check against a real tree: tests/btrfs/memory_tree_source_test.cpp):
// - search(): the items whose objectid, type and offset EACH lie inside the box, in key
//   order; items of leaves older than min_transid or newer than max_transid are left out
//   (the kernel skips such leaves whole), and so are items whose own generation
//   (btrfs::item_generation) is older than min_transid (TreeSearch drops those).
// - first_key(): the kernel's one-item probe, over the ONE 136-bit interval min..max key
//   with the same leaf filter, and no per-item filter.
// - tree_id 0 is `default_tree` (the kernel's "tree of the fd's subvolume"); a tree with no
//   item added is ENOENT, as the kernel says of a tree id with no root.
// Searches may run from several threads once the items are added; adding is not
// synchronised with them.
#pragma once

#include <linux/btrfs_tree.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "btrfs/tree_source.h"

namespace btrdedupe::test {

class MemoryTreeSource final : public btrfs::TreeSource {
 public:
  explicit MemoryTreeSource(uint64_t default_tree = BTRFS_FS_TREE_OBJECTID)
      : default_tree_(default_tree) {}

  // Adds or replaces the item at `key` of `tree`. leaf_generation: of the leaf holding it
  // (what min/max_transid filter); default: the item's own generation, or 0 without one.
  void add(uint64_t tree, const btrfs::ItemKey& key, std::vector<uint8_t> data,
           std::optional<uint64_t> leaf_generation = {});
  // Removes the item at `key` (an inode deleted: each of its items); false when absent.
  bool remove(uint64_t tree, const btrfs::ItemKey& key);
  size_t items(uint64_t tree) const;

  std::unique_ptr<btrfs::ItemCursor> search(const btrfs::SearchKey& key,
                                            size_t buffer_bytes) override;
  btrfs::Result<std::optional<btrfs::ItemKey>> first_key(const btrfs::SearchKey& key) override;

  // Calls of search() and first_key() so far, for tests of how a reader searches.
  uint64_t searches() const { return searches_.load(); }
  uint64_t probes() const { return probes_.load(); }

  using Key = std::tuple<uint64_t, uint8_t, uint64_t>;
  struct Stored {
    std::vector<uint8_t> data;
    uint64_t leaf_generation = 0;
  };
  using Tree = std::map<Key, Stored>;

 private:
  const Tree* tree(uint64_t id) const;

  uint64_t default_tree_;
  std::map<uint64_t, Tree> trees_;
  std::atomic<uint64_t> searches_{0}, probes_{0};
};

}  // namespace btrdedupe::test
