// The earlier windows' files that a window verified as twins, kept as the tree showed them,
// so that later windows take them again without reading the tree. A window of each later
// copy takes the first copy's files as twins: 4 unshared copies of linux-source read them
// back 3 times, 8 copies 7 times, ~3.6 µs a file, where a whole run reads them once.
//
// Only files of windows already done are kept (IncrementalScan::window_passed): from then
// on they are sources only (BatchRoles::source_only), so this run does not change them; a
// file changed by others meanwhile is what the kernel's compare and the open-time check
// (open_scanned_file) catch, as for the files of a whole run.
//
// Contract: find() gives back what keep() was given of the fields a twin's verification and
// placement read: the item's size, flags, mode and mtime, the first name and its parent,
// the extents and what was passed over; the item's other fields are zero. Memory stays
// under the budget: past it, or for a file whose state takes more than a block (64 KiB,
// some thousands of extents), keep() keeps nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "src/catalog.h"
#include "src/inode_lookup.h"

namespace btrdedupe {

class VerifiedTwins {
 public:
  explicit VerifiedTwins(size_t budget_bytes) : budget_(budget_bytes) {}

  // False: not kept (over the budget, or more than a block); find() then gives nothing.
  bool keep(const FileKey& key, const InodeState& state);
  std::optional<InodeState> find(const FileKey& key) const;
  bool contains(const FileKey& key) const { return at_.count(key) > 0; }
  size_t files() const { return at_.size(); }
  // Blocks and index, as allocated.
  size_t bytes() const;

 private:
  static constexpr size_t kBlockBytes = 64 << 10, kMaxBlocks = 64 << 10;
  std::vector<std::vector<uint8_t>> blocks_;  // each reserved kBlockBytes once
  std::unordered_map<FileKey, uint32_t, FileKeyHash> at_;  // block << 16 | offset
  size_t budget_;
};

}  // namespace btrdedupe
