#include "src/plan/freed_space.h"

#include <algorithm>

#include "btrfs/extent_tree.h"
#include "src/plan/destination_ranges.h"
#include "src/read/file_extent_index.h"

namespace btrdedupe {

std::vector<PhysicalExtent> destination_extents(const ScanResult& scan, const DedupePlan& plan) {
  const auto ranges = destination_ranges(plan);
  const auto sources = source_extents(scan, plan);
  auto unwritten = scan.passed_over.prealloc_bytenrs;
  std::sort(unwritten.begin(), unwritten.end());
  std::vector<PhysicalExtent> out;
  const auto& ex = scan.extents;  // sorted by disk_bytenr: an extent's references are adjacent
  for (size_t i = 0; i < ex.size();) {
    size_t end = i;
    bool touched = false, all_covered = true, refs_unknown = false;
    uint64_t subvolume = 0;
    for (; end < ex.size() && ex[end].disk_bytenr == ex[i].disk_bytenr; ++end) {
      const FileExtent& e = ex[end];

      // An extent item ends on a sector boundary; a range that reaches EOF covers its tail.
      const uint64_t ref_end = std::min(e.file_offset + e.length,
                                    std::max(scan.files[e.file].size, e.file_offset + 1));
      const Cover c = covered(ranges.of(e.file), e.file_offset, ref_end);
      if (c != Cover::None && !touched) subvolume = scan.files[e.file].subvolume;
      touched = touched || c != Cover::None;
      all_covered = all_covered && c == Cover::All && !scan.files[e.file].readonly_alias;
      refs_unknown = refs_unknown || e.refs_unknown;
    }
    if (touched) {
      const uint64_t at = ex[i].disk_bytenr;
      const bool source = std::binary_search(sources.begin(), sources.end(), at);
      const bool unwritten_refs = std::binary_search(unwritten.begin(), unwritten.end(), at);
      out.push_back({at, ex[i].disk_num_bytes, subvolume,
                     all_covered && !source && !unwritten_refs && !refs_unknown, source,
                     unwritten_refs});
      out.back().refs_unknown = refs_unknown;
    }
    i = end;
  }
  return out;
}

std::vector<uint64_t> source_extents(const ScanResult& scan, const DedupePlan& plan) {
  const FileExtentIndex index(scan);
  std::vector<uint64_t> out;
  for (const auto& r : plan.rounds)
    for (uint64_t at = r.source.offset; at < r.source.offset + r.length;) {
      const FileExtent* e = index.at(r.source.file, at);
      if (!e) break;
      out.push_back(e->disk_bytenr);
      at = e->file_offset + e->length;
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void FreedSpace::add(const FreedSpace& more) {
  bytes += more.bytes;
  extents += more.extents;
  for (const auto& [id, b] : more.by_subvolume) by_subvolume[id] += b;
}

FreedSpace predicted_freed(const std::vector<PhysicalExtent>& extents) {
  FreedSpace f;
  for (const auto& e : extents)
    if (e.freed_by_plan || e.rewrite_bytes) {
      const uint64_t net = e.freed_by_plan ? e.disk_bytes
                                           : e.disk_bytes - std::min(e.disk_bytes, e.rewrite_bytes);
      f.bytes += net;
      ++f.extents;
      f.by_subvolume[e.subvolume] += net;
    }
  return f;
}

btrfs::Result<std::vector<bool>> still_allocated(int fd, const std::vector<PhysicalExtent>& extents,
                                                 uint64_t scanned_at) {
  std::vector<uint64_t> bytenrs;
  bytenrs.reserve(extents.size());
  for (const auto& e : extents) bytenrs.push_back(e.bytenr);
  return btrfs::extents_allocated(fd, bytenrs, scanned_at ? scanned_at : UINT64_MAX);
}

FreedSpace freed_of(const std::vector<PhysicalExtent>& extents, const std::vector<bool>& allocated,
                    const std::map<uint64_t, uint64_t>& rewritten) {
  FreedSpace f;
  for (size_t i = 0; i < extents.size() && i < allocated.size(); ++i)
    if (!allocated[i]) {
      f.bytes += extents[i].disk_bytes;
      ++f.extents;
      f.by_subvolume[extents[i].subvolume] += extents[i].disk_bytes;
    }
  for (const auto& [id, bytes] : rewritten) {
    auto& in = f.by_subvolume[id];
    const uint64_t taken = std::min({bytes, in, f.bytes});
    in -= taken;
    f.bytes -= taken;
  }
  return f;
}

btrfs::Result<FreedSpace> measure_freed(int fd, const std::vector<PhysicalExtent>& extents,
                                        const std::map<uint64_t, uint64_t>& rewritten,
                                        uint64_t scanned_at) {
  auto allocated = still_allocated(fd, extents, scanned_at);
  if (!allocated) return allocated.error();
  return freed_of(extents, *allocated, rewritten);
}

}  // namespace btrdedupe
