// Synthetic scans for unit tests: no disk; each sector's "checksum" is a content id.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "src/match/duplicate_match.h"

namespace btrdedupe {

inline constexpr uint32_t kSector = 4096;
inline constexpr uint32_t kHole = UINT32_MAX;  // a hole sector, for add_sparse_file

// Builds a ScanResult + FingerprintResult where each sector's "checksum" is a content id.
class SyntheticFs {
 public:
  SyntheticFs() {
    scan.fs.sectorsize = kSector;
    scan.fs.csum_size = 4;
    scan.roots.push_back({"/synthetic", false});
    fp.files = FileSumsTable(scan.fs.csum_size);
  }

  // A file of `size` bytes whose sector i holds content[i]; its data lives in one extent per
  // entry of `extents` (lengths in sectors), at fresh disk addresses unless `share_with`
  // names a file whose extents it reuses (a reflink).
  uint32_t add_file(uint64_t size, const std::vector<uint32_t>& content,
                    std::vector<uint64_t> extents = {}, int share_with = -1) {
    const auto f = static_cast<uint32_t>(scan.files.size());
    ScannedFile file;
    file.inode = 257 + f;
    file.size = size;
    file.path_node = scan.paths.add(PathTable::kRoot, "f" + std::to_string(f));
    scan.files.push_back(file);
    fp.files.add(content.size());
    const auto sums = fp.files.sums(f);
    for (size_t i = 0; i < content.size(); ++i) std::memcpy(&sums[i * 4], &content[i], 4);
    std::ranges::fill(fp.files.known(f), uint8_t{1});
    if (share_with >= 0) {
      // By index: push_back may move the vector (a range-for would read freed memory).
      for (size_t i = 0, n = scan.extents.size(); i < n; ++i) {
        FileExtent e = scan.extents[i];
        if (e.file != static_cast<uint32_t>(share_with)) continue;
        e.file = f;
        scan.extents.push_back(e);
      }
      return f;
    }
    if (extents.empty()) extents = {content.size()};
    uint64_t off = 0;
    for (uint64_t len : extents) {
      if (len) add_extent(f, off, len * kSector);
      off += len * kSector;
    }
    return f;
  }

  // One extent of file f at a fresh disk address.
  void add_extent(uint32_t f, uint64_t file_offset, uint64_t length) {
    FileExtent e;
    e.file = f;
    e.file_offset = file_offset;
    e.length = length;
    e.disk_bytenr = next_disk_;
    e.disk_num_bytes = length;
    next_disk_ += length;
    scan.extents.push_back(e);
  }

  // A sparse file: sector i holds content[i], or is a hole where content[i] is kHole (a
  // prealloc range looks the same: the scan keeps neither). Each run of data sectors is one
  // extent at a fresh disk address; hole sectors have no extent and no known sum.
  uint32_t add_sparse_file(uint64_t size, const std::vector<uint32_t>& content) {
    const auto f = add_file(size, content, {0});  // no extent yet
    for (size_t i = 0; i < content.size();) {
      if (content[i] == kHole) {
        unknown(f, i++);
        continue;
      }
      size_t end = i;
      while (end < content.size() && content[end] != kHole) ++end;
      add_extent(f, i * kSector, (end - i) * kSector);
      i = end;
    }
    return f;
  }

  void unknown(uint32_t f, size_t sector) { fp.files.known(f)[sector] = 0; }

  // Puts file f in subvolume `id`, listed as read-only or not.
  void in_subvolume(uint32_t f, uint64_t id, bool readonly) {
    scan.files[f].subvolume = id;
    for (const auto& s : scan.subvolumes)
      if (s.id == id) return;
    btrfs::Subvolume s;
    s.id = id;
    s.readonly = readonly;
    scan.subvolumes.push_back(s);
  }

  MatchResult match(uint64_t block = 2 * kSector, bool partial = true) {
    return find_duplicates(scan, fp, {block, partial});
  }

  ScanResult scan;
  FingerprintResult fp;

 private:
  uint64_t next_disk_ = 1 << 20;
};

inline std::vector<uint32_t> seq(uint32_t first, size_t n) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = first + static_cast<uint32_t>(i);
  return v;
}

}  // namespace btrdedupe
