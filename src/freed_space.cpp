#include "src/freed_space.h"

#include <algorithm>
#include <unordered_map>

#include "btrfs/extent_tree.h"

namespace btrdedupe {
namespace {

struct Interval {
  uint64_t start, end;
};

// Destination ranges of the plan by file, sorted and merged.
std::unordered_map<uint32_t, std::vector<Interval>> destination_ranges(const DedupePlan& plan) {
  std::unordered_map<uint32_t, std::vector<Interval>> by_file;
  for (const auto& round : plan.rounds)
    for (const auto& d : round.destinations)
      by_file[d.file].push_back({d.offset, d.offset + round.length});
  for (auto& [file, v] : by_file) {
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
    std::vector<Interval> merged;
    for (const auto& i : v)
      if (!merged.empty() && i.start <= merged.back().end)
        merged.back().end = std::max(merged.back().end, i.end);
      else
        merged.push_back(i);
    v = std::move(merged);
  }
  return by_file;
}

// How much of [start, end) the sorted, merged intervals cover: none, part, or all of it.
enum class Cover { None, Part, All };
Cover covered(const std::vector<Interval>& v, uint64_t start, uint64_t end) {
  auto it = std::upper_bound(v.begin(), v.end(), start,
                             [](uint64_t s, const Interval& i) { return s < i.start; });
  if (it != v.begin() && std::prev(it)->end > start) {
    if (std::prev(it)->end >= end) return Cover::All;
    return Cover::Part;
  }
  return it != v.end() && it->start < end ? Cover::Part : Cover::None;
}

}  // namespace

std::vector<PhysicalExtent> destination_extents(const ScanResult& scan, const DedupePlan& plan) {
  const auto ranges = destination_ranges(plan);
  std::vector<PhysicalExtent> out;
  const auto& ex = scan.extents;  // sorted by disk_bytenr: an extent's references are adjacent
  for (size_t i = 0; i < ex.size();) {
    size_t end = i;
    bool touched = false, all_covered = true;
    uint64_t subvolume = 0;
    for (; end < ex.size() && ex[end].disk_bytenr == ex[i].disk_bytenr; ++end) {
      const FileExtent& e = ex[end];
      const auto r = ranges.find(e.file);
      // An extent item ends on a sector boundary; a range that reaches EOF covers its tail.
      const uint64_t ref_end = std::min(e.file_offset + e.length,
                                    std::max(scan.files[e.file].size, e.file_offset + 1));
      const Cover c = r == ranges.end() ? Cover::None : covered(r->second, e.file_offset, ref_end);
      if (c != Cover::None && !touched) subvolume = scan.files[e.file].subvolume;
      touched = touched || c != Cover::None;
      all_covered = all_covered && c == Cover::All && !scan.files[e.file].readonly_alias;
    }
    if (touched) out.push_back({ex[i].disk_bytenr, ex[i].disk_num_bytes, subvolume, all_covered});
    i = end;
  }
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
    if (e.freed_by_plan) {
      f.bytes += e.disk_bytes;
      ++f.extents;
      f.by_subvolume[e.subvolume] += e.disk_bytes;
    }
  return f;
}

btrfs::Result<FreedSpace> measure_freed(int fd, const std::vector<PhysicalExtent>& extents) {
  std::vector<uint64_t> bytenrs;
  bytenrs.reserve(extents.size());
  for (const auto& e : extents) bytenrs.push_back(e.bytenr);
  auto allocated = btrfs::extents_allocated(fd, bytenrs);
  if (!allocated) return allocated.error();
  FreedSpace f;
  for (size_t i = 0; i < extents.size(); ++i)
    if (!(*allocated)[i]) {
      f.bytes += extents[i].disk_bytes;
      ++f.extents;
      f.by_subvolume[extents[i].subvolume] += extents[i].disk_bytes;
    }
  return f;
}

}  // namespace btrdedupe
