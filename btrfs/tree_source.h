// Where the readers of btrfs trees get their items: the kernel's tree search, or (in tests)
// an in-memory tree. The seam between the readers' rules (what becomes a file, what is
// counted, which inodes changed) and the ioctl that feeds them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "btrfs/result.h"
#include "btrfs/tree_search.h"

namespace btrfs {

// The items of one search box, in key order, with TreeSearch's semantics (the box, and the
// min_transid filter of leaves and items: btrfs/tree_search.h).
class ItemCursor {
 public:
  virtual ~ItemCursor() = default;
  // The next item, nullopt at the end; its data is valid until the next call.
  virtual Result<std::optional<TreeItem>> next() = 0;
  // TREE_SEARCH_V2 calls made so far (0 for a source that makes none).
  virtual uint64_t ioctl_calls() const = 0;
};

// Contract: search() and first_key() may be called from several threads at once (the tree
// warm-up does), and each cursor is used by one thread. The source outlives its cursors.
class TreeSource {
 public:
  virtual ~TreeSource() = default;
  // A cursor over `key`'s box. buffer_bytes: the kernel result area (TreeSearch).
  virtual std::unique_ptr<ItemCursor> search(const SearchKey& key, size_t buffer_bytes) = 0;
  // The first item's key inside `key`'s ONE 136-bit interval (first_item_key).
  virtual Result<std::optional<ItemKey>> first_key(const SearchKey& key) = 0;
};

// The kernel's trees, through any fd on the filesystem (tree_id 0: the fd's subvolume).
// Holds the fd number only: the fd must stay open while the source and its cursors live.
class KernelTreeSource final : public TreeSource {
 public:
  explicit KernelTreeSource(int fd) : fd_(fd) {}
  std::unique_ptr<ItemCursor> search(const SearchKey& key, size_t buffer_bytes) override;
  Result<std::optional<ItemKey>> first_key(const SearchKey& key) override;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace btrfs
