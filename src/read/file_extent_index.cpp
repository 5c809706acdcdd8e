#include "src/read/file_extent_index.h"

#include <algorithm>
#include <numeric>

namespace btrdedupe {

FileExtentIndex::FileExtentIndex(const ScanResult& scan)
    : scan_(scan), order_(scan.extents.size()), begin_(scan.files.size() + 1, 0) {
  std::iota(order_.begin(), order_.end(), 0u);
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    const FileExtent &x = scan.extents[a], &y = scan.extents[b];
    return x.file != y.file ? x.file < y.file : x.file_offset < y.file_offset;
  });
  for (const FileExtent& e : scan.extents) ++begin_[e.file + 1];
  std::partial_sum(begin_.begin(), begin_.end(), begin_.begin());
}

const FileExtent* FileExtentIndex::at(uint32_t file, uint64_t offset) const {
  const auto v = of(file);
  // First extent starting after offset; the one before it may hold offset.
  auto it = std::upper_bound(v.begin(), v.end(), offset, [&](uint64_t off, uint32_t idx) {
    return off < scan_.extents[idx].file_offset;
  });
  if (it == v.begin()) return nullptr;
  const FileExtent& e = scan_.extents[*std::prev(it)];
  return offset < e.file_offset + e.length ? &e : nullptr;
}

std::vector<SectorRun> FileExtentIndex::data_runs(uint32_t file) const {
  const uint64_t ss = scan_.fs.sectorsize ? scan_.fs.sectorsize : 4096;
  const uint64_t sectors = (scan_.files[file].size + ss - 1) / ss;
  std::vector<SectorRun> runs;
  for (uint32_t idx : of(file)) {
    const FileExtent& e = scan_.extents[idx];
    const uint64_t first = e.file_offset / ss;
    const uint64_t end = std::min(sectors, (e.file_offset + e.length + ss - 1) / ss);
    if (first >= end) continue;  // past EOF
    if (!runs.empty() && runs.back().first + runs.back().count >= first) {
      const uint64_t run_end = std::max(runs.back().first + runs.back().count, end);
      runs.back().count = run_end - runs.back().first;
    } else {
      runs.push_back({first, end - first});
    }
  }
  return runs;
}

}  // namespace btrdedupe
