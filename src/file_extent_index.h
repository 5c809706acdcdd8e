// Per-file view of a scan's extents (which are stored in physical order).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/tree_scan.h"

namespace btrdedupe {

class FileExtentIndex {
 public:
  explicit FileExtentIndex(const ScanResult& scan);

  // The extents of `file`, by file offset.
  std::span<const uint32_t> of(uint32_t file) const { return by_file_[file]; }
  // The extent holding byte `offset` of `file`; nullptr for a hole or an inline extent.
  const FileExtent* at(uint32_t file, uint64_t offset) const;

 private:
  const ScanResult& scan_;
  std::vector<std::vector<uint32_t>> by_file_;  // indices into scan.extents
};

}  // namespace btrdedupe
