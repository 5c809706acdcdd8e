// Per-file view of a scan's extents (which are stored in physical order).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/read/tree_scan.h"

namespace btrdedupe {

// Sectors [first, first + count) of a file.
struct SectorRun {
  uint64_t first = 0, count = 0;
  bool operator==(const SectorRun&) const = default;
};

class FileExtentIndex {
 public:
  explicit FileExtentIndex(const ScanResult& scan);

  // The extents of `file`, by file offset.
  std::span<const uint32_t> of(uint32_t file) const {
    return {order_.data() + begin_[file], order_.data() + begin_[file + 1]};
  }
  // The extent holding byte `offset` of `file`; nullptr for a hole or an inline extent.
  const FileExtent* at(uint32_t file, uint64_t offset) const;
  // The disk address of byte `offset` of `file` (0 for a hole or an inline extent): the
  // order rounds run in.
  uint64_t disk_address(uint32_t file, uint64_t offset) const {
    const FileExtent* e = at(file, offset);
    return e ? e->disk_bytenr + e->extent_offset + (offset - e->file_offset) : 0;
  }

  // The sectors of `file` below EOF that hold data (its regular extents), merged, in file
  // order. The rest reads as zeros: holes, and prealloc (unwritten) extents, which count as
  // holes (the scan keeps neither; deduping unwritten space would share nothing) — unless
  // the file has an inline extent (ScannedFile::inline_data), which is neither.
  std::vector<SectorRun> data_runs(uint32_t file) const;

 private:
  const ScanResult& scan_;
  // Indices into scan.extents sorted by (file, file offset), and where each file's start:
  // 4 bytes per extent and per file, not a vector per file.
  std::vector<uint32_t> order_;
  std::vector<uint32_t> begin_;
};

}  // namespace btrdedupe
