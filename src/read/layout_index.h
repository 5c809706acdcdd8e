// The tree scan's index of files by the exact layout of their data (internal to the scan).
// Apart from the scan's walk because the walk consults it at two moments (a file as it is
// read, a whole subvolume after its read), and its key is its own rule of when a read-only
// snapshot's file is a copy of one already scanned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "src/read/tree_scan.h"

namespace btrdedupe {

// Files by the exact layout of their data, to fold read-only snapshot copies.
class LayoutIndex {
 public:
  // Registers files [first_file, end) and their extents [first_extent, end), which the
  // scan just appended, each file's extents together and in file order. With `fold`, a
  // file whose layout is already known is removed and its twin marked; a read-only file
  // without any extent is dropped too (nothing to do).
  void add(ScanResult& out, size_t first_file, size_t first_extent, bool fold);

  // The file already registered with this layout (by an earlier add), if any.
  std::optional<uint32_t> find(uint64_t size, uint64_t inode_flags, const FileExtent* first,
                               const FileExtent* end) const;

 private:
  struct Key {
    uint64_t lo, hi;
    bool operator==(const Key& o) const { return lo == o.lo && hi == o.hi; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k.lo); }
  };

  static Key layout_key(uint64_t size, uint64_t inode_flags, const FileExtent* first,
                        const FileExtent* end);

  std::unordered_map<Key, uint32_t, KeyHash> known_;
};

}  // namespace btrdedupe
