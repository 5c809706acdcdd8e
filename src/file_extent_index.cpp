#include "src/file_extent_index.h"

#include <algorithm>

namespace btrdedupe {

FileExtentIndex::FileExtentIndex(const ScanResult& scan)
    : scan_(scan), by_file_(scan.files.size()) {
  for (uint32_t i = 0; i < scan.extents.size(); ++i) by_file_[scan.extents[i].file].push_back(i);
  for (auto& v : by_file_)
    std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      return scan.extents[a].file_offset < scan.extents[b].file_offset;
    });
}

const FileExtent* FileExtentIndex::at(uint32_t file, uint64_t offset) const {
  const auto& v = by_file_[file];
  // First extent starting after offset; the one before it may hold offset.
  auto it = std::upper_bound(v.begin(), v.end(), offset, [&](uint64_t off, uint32_t idx) {
    return off < scan_.extents[idx].file_offset;
  });
  if (it == v.begin()) return nullptr;
  const FileExtent& e = scan_.extents[*std::prev(it)];
  return offset < e.file_offset + e.length ? &e : nullptr;
}

}  // namespace btrdedupe
