// The earlier windows' files that a window verified as twins, kept as the tree showed them,
// so that later windows take them again without reading the tree. A window of each later
// copy takes the first copy's files as twins: 4 unshared copies of linux-source read them
// back 3 times, 8 copies 7 times, ~3.6 µs a file, where a whole run reads them once.
//
// Only files of windows already done are kept (IncrementalScan::window_passed): from then
// on they are sources only (BatchRoles::source_only), so this run does not change them; a
// file changed by others meanwhile is what the kernel's compare and the open-time check
// (open_scanned_file) catch, as for the files of a whole run. A run that changes no file
// (a report) keeps a window's files as it reads them, for the same reason
// (WindowTwins::keep_files_as_read).
//
// A kept twin's sector sums are kept too, once a window has read them (keep_sums): each
// later copy's window then takes them from here, not from the csum tree, so the twins' sums
// are read once as in a whole run, not once per copy (4 copies read 9.6 GB worth of sums
// for 5.5 GB of data). A sum stands for the sector's content, which a source-only file
// keeps in this run; what others change meanwhile the kernel's compare catches, as above.
//
// Contract: find() gives back what keep() was given of the fields a twin's verification and
// placement read: the item's size, flags, mode and mtime, the first name and its parent,
// the extents and what was passed over; the item's other fields are zero. find_sums()
// gives back what keep_sums() was given, byte for byte. Memory stays under the budget:
// past it, or for a record that takes more than a block (64 KiB: some thousands of
// extents, or ~13,000 sectors' 4-byte sums), keep() and keep_sums() keep nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "src/catalog/catalog.h"
#include "src/fingerprint/fingerprint.h"
#include "src/read/inode_lookup.h"

namespace btrdedupe {

class VerifiedTwins {
 public:
  explicit VerifiedTwins(size_t budget_bytes) : budget_(budget_bytes) {}

  // False: not kept (over the budget, or more than a block); find() then gives nothing.
  bool keep(const FileKey& key, const InodeState& state);
  std::optional<InodeState> find(const FileKey& key) const;
  bool contains(const FileKey& key) const { return at_.count(key) > 0; }
  size_t files() const { return at_.size(); }

  // False: not kept (no state kept for `key`, over the budget, or more than a block).
  bool keep_sums(const FileKey& key, FileSumsView sums);
  // A view into the blocks, valid while this lives: they are never moved or freed.
  std::optional<FileSumsView> find_sums(const FileKey& key) const;
  size_t files_with_sums() const { return with_sums_; }

  // Blocks and index, as allocated.
  size_t bytes() const;

 private:
  static constexpr size_t kBlockBytes = 64 << 10, kMaxBlocks = 64 << 10;
  static constexpr uint32_t kNone = UINT32_MAX;  // no block holds this place
  struct Places {
    uint32_t state = kNone, sums = kNone;  // each block << 16 | offset
  };
  // Where `record` went in the blocks; kNone: not kept. index_bytes: what the index grows
  // by with it, which the budget holds too.
  uint32_t append(const std::vector<uint8_t>& record, size_t index_bytes);

  std::vector<std::vector<uint8_t>> blocks_;  // each reserved kBlockBytes once
  std::unordered_map<FileKey, Places, FileKeyHash> at_;
  size_t budget_, with_sums_ = 0;
};

}  // namespace btrdedupe
