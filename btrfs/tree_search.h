// Iterator over btrfs tree items with BTRFS_IOC_TREE_SEARCH_V2 (needs CAP_SYS_ADMIN).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

inline constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

// A box in key space. The kernel treats (objectid, type, offset) min..max as ONE interval
// over the 136-bit key; TreeSearch additionally drops items whose type or offset lies
// outside [min,max], so callers get exactly the box they asked for.
struct SearchKey {
  uint64_t tree_id = 0;  // 0: the tree of the subvolume the fd is in
  uint64_t min_objectid = 0, max_objectid = kMaxU64;
  uint8_t min_type = 0, max_type = 255;
  uint64_t min_offset = 0, max_offset = kMaxU64;
  // Leaves older than min_transid are skipped by the kernel; items whose own generation
  // (see item_generation) is older are skipped by TreeSearch.
  uint64_t min_transid = 0, max_transid = kMaxU64;
};

struct TreeItem {
  uint64_t objectid = 0;
  uint8_t type = 0;
  uint64_t offset = 0;
  uint64_t transid = 0;              // generation of the leaf holding the item
  std::span<const uint8_t> data;     // raw little-endian item bytes; valid until next()
};

// The key of the first item inside `key`'s interval, or nullopt when there is none. One
// TREE_SEARCH_V2 call with nr_items = 1: the kernel stops after that item, so a probe
// reads only the path down to its leaf (for picking split points without a walk). The
// kernel's interval is ONE interval over the 136-bit key: unlike TreeSearch, type and
// offset bounds are not applied to each objectid separately.
struct ItemKey {
  uint64_t objectid = 0;
  uint8_t type = 0;
  uint64_t offset = 0;
};
Result<std::optional<ItemKey>> first_item_key(int fd, const SearchKey& key);

class TreeSearch {
 public:
  // fd: any fd on the filesystem (for tree_id 0, one inside the wanted subvolume).
  // buffer_bytes: kernel result area (after the args header); grown automatically (up to
  // 16 MiB) on EOVERFLOW. Each call continues from the smallest key inside the box after
  // the last returned one, so the kernel skips what the box excludes.
  TreeSearch(int fd, const SearchKey& key, size_t buffer_bytes = 256 * 1024);

  // The next item in key order, nullopt at the end. Errors carry the ioctl's errno.
  Result<std::optional<TreeItem>> next();

  // Number of TREE_SEARCH_V2 calls made so far (for reports and tests).
  uint64_t ioctl_calls() const { return calls_; }

 private:
  Result<void> fill();
  bool wanted(const TreeItem& item) const;
  void advance_past(const TreeItem& item);

  int fd_;
  SearchKey box_;                  // what the caller asked for
  SearchKey key_;                  // min key advances as results are consumed
  void allocate(size_t words);

  std::unique_ptr<uint64_t[]> buffer_;  // 8-byte aligned: args header + results
  size_t words_ = 0;
  bool range_ended_ = false;       // the last call ended at the end of the box
  size_t pos_ = 0, end_ = 0;       // byte positions inside the results area
  uint32_t pending_ = 0;           // items left in the current batch
  bool done_ = false;
  uint64_t calls_ = 0;
};

}  // namespace btrfs
