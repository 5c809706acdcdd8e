// Folding read-only snapshot copies by the layout of their data; why this is apart from the
// scan's walk: src/read/layout_index.h.
#include "src/read/layout_index.h"

#include <xxhash.h>

#include <algorithm>
#include <vector>

namespace btrdedupe {

void LayoutIndex::add(ScanResult& out, size_t first_file, size_t first_extent, bool fold) {
  const size_t nfiles = out.files.size() - first_file;
  std::vector<size_t> begin(nfiles + 1, out.extents.size());  // file i: [begin[i], begin[i+1])
  for (size_t e = out.extents.size(); e-- > first_extent;)
    begin[out.extents[e].file - first_file] = e;
  for (size_t i = nfiles; i-- > 0;) begin[i] = std::min(begin[i], begin[i + 1]);
  std::vector<int64_t> remap(nfiles);
  size_t kept = 0;
  for (size_t i = 0; i < nfiles; ++i) {
    ScannedFile& f = out.files[first_file + i];
    const bool no_extents = begin[i] == begin[i + 1];
    const Key key = layout_key(f.size, f.inode_flags, out.extents.data() + begin[i],
                               out.extents.data() + begin[i + 1]);
    auto it = known_.find(key);
    if (fold && (no_extents || it != known_.end())) {
      if (it != known_.end()) {
        out.files[it->second].readonly_alias = true;
        out.readonly_alias_subvolumes.add(it->second, f.subvolume);
      }
      ++out.passed_over.readonly_aliases;
      remap[i] = -1;
      continue;
    }
    remap[i] = static_cast<int64_t>(first_file + kept);
    if (!no_extents) known_.emplace(key, static_cast<uint32_t>(first_file + kept));
    if (kept != i) out.files[first_file + kept] = std::move(f);
    ++kept;
  }
  if (kept == nfiles) return;
  out.files.resize(first_file + kept);
  size_t w = first_extent;
  for (size_t e = first_extent; e < out.extents.size(); ++e) {
    const int64_t to = remap[out.extents[e].file - first_file];
    if (to < 0) continue;
    out.extents[w] = out.extents[e];
    out.extents[w].file = static_cast<uint32_t>(to);
    ++w;
  }
  out.extents.resize(w);
}

std::optional<uint32_t> LayoutIndex::find(uint64_t size, uint64_t inode_flags,
                                          const FileExtent* first, const FileExtent* end) const {
  auto it = known_.find(layout_key(size, inode_flags, first, end));
  if (it == known_.end()) return std::nullopt;
  return it->second;
}

LayoutIndex::Key LayoutIndex::layout_key(uint64_t size, uint64_t inode_flags,
                                         const FileExtent* first, const FileExtent* end) {
  std::vector<uint64_t> words{size, inode_flags & btrfs::kInodeNoDataSum};
  for (const FileExtent* e = first; e != end; ++e) {
    words.push_back(e->file_offset);
    words.push_back(e->length);
    words.push_back(e->disk_bytenr);
    words.push_back(e->extent_offset);
  }
  const XXH128_hash_t h = XXH3_128bits(words.data(), words.size() * sizeof(uint64_t));
  return {h.low64, h.high64};
}

}  // namespace btrdedupe
