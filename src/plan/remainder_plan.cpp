#include "src/plan/remainder_plan.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "src/plan/destination_ranges.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// The remainder of the extent whose references are ex[begin, end), or nothing when the
// rule does not allow its rewrite (except for the budget).
std::optional<RemainderExtent> remainder_of(const ScanResult& scan, const RangesByFile& ranges,
                                            size_t begin, size_t end,
                                            const RemainderRules& rules) {
  const auto& ex = scan.extents;
  RemainderExtent out{ex[begin].disk_bytenr, ex[begin].disk_num_bytes, {}, false, {}};
  std::vector<Interval> in_extent;  // the remainder's bytes as offsets into the extent
  uint64_t logical_end = 0;
  bool compressed = false;
  for (size_t i = begin; i < end; ++i) {
    const FileExtent& e = ex[i];
    const ScannedFile& f = scan.files[e.file];
    if (!writable(scan, f)) return std::nullopt;
    // As in destination_extents: a reference's tail past EOF is the sector's padding.
    const uint64_t ref_end = std::min(e.file_offset + e.length, std::max(f.size, e.file_offset + 1));
    logical_end = std::max(logical_end, e.extent_offset + e.length);
    compressed = compressed || e.compression != btrfs::Compression::None;
    const auto parts = uncovered(ranges.of(e.file), e.file_offset, ref_end);
    for (const auto& p : parts) {
      out.ranges.push_back({e.file, p.start, p.end - p.start});
      const uint64_t at = e.extent_offset + (p.start - e.file_offset);
      in_extent.push_back({at, at + (p.end - p.start)});
    }
  }
  if (out.ranges.empty()) return std::nullopt;
  std::sort(in_extent.begin(), in_extent.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  for (size_t i = 1; i < in_extent.size(); ++i)
    if (in_extent[i].start < in_extent[i - 1].end) return std::nullopt;  // shared remainder
  // A compressed extent's disk size says little of the data it holds: measure the
  // remainder against the logical bytes its references reach.
  const uint64_t extent_bytes = compressed ? logical_end : out.disk_bytes;
  const uint64_t bytes = out.bytes();
  if (bytes > rules.max_remainder_bytes || bytes * rules.max_remainder_share > extent_bytes)
    return std::nullopt;
  for (size_t i = begin; i < end; ++i)
    out.references.push_back({ex[i].file, ex[i].file_offset, ex[i].length});
  std::sort(out.ranges.begin(), out.ranges.end(), [](const RemainderRange& a, const RemainderRange& b) {
    return std::tie(a.file, a.offset) < std::tie(b.file, b.offset);
  });
  return out;
}

uint64_t rounded(uint64_t bytes, uint32_t sector) { return (bytes + sector - 1) / sector * sector; }

}  // namespace

uint64_t RemainderExtent::bytes() const {
  uint64_t n = 0;
  for (const auto& r : ranges) n += r.length;
  return n;
}

RemainderPlan plan_remainders(const ScanResult& scan, const DedupePlan& plan,
                              std::vector<PhysicalExtent>& extents, const RemainderRules& rules) {
  const auto ranges = destination_ranges(plan);
  std::vector<RemainderExtent> candidates;
  const auto& ex = scan.extents;  // sorted by disk_bytenr, as `extents` is
  auto pe = extents.begin();
  for (size_t i = 0; i < ex.size();) {
    size_t end = i;
    while (end < ex.size() && ex[end].disk_bytenr == ex[i].disk_bytenr) ++end;
    while (pe != extents.end() && pe->bytenr < ex[i].disk_bytenr) ++pe;
    if (pe != extents.end() && pe->bytenr == ex[i].disk_bytenr && !pe->freed_by_plan &&
        !pe->unwritten_refs)
      if (auto r = remainder_of(scan, ranges, i, end, rules)) {
        r->before_rounds = pe->source;
        if (!r->before_rounds) r->references.clear();
        candidates.push_back(std::move(*r));
      }
    i = end;
  }
  // Most freed per byte written first: bytes/disk_bytes ascending.
  const auto share = [](const RemainderExtent& e) {
    return static_cast<double>(e.bytes()) / static_cast<double>(std::max<uint64_t>(e.disk_bytes, 1));
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const RemainderExtent& a, const RemainderExtent& b) { return share(a) < share(b); });
  RemainderPlan out;
  for (auto& c : candidates) {
    const uint64_t bytes = c.bytes();
    if (out.bytes + bytes > rules.budget_bytes) {
      ++out.skipped_for_budget;
      out.bytes_skipped_for_budget += bytes;
      continue;
    }
    out.bytes += bytes;
    out.extents.push_back(std::move(c));
  }
  std::sort(out.extents.begin(), out.extents.end(),
            [](const RemainderExtent& a, const RemainderExtent& b) { return a.bytenr < b.bytenr; });
  const uint32_t sector = std::max<uint32_t>(scan.fs.sectorsize, 1);
  auto it = extents.begin();
  for (const auto& r : out.extents) {
    while (it != extents.end() && it->bytenr < r.bytenr) ++it;
    if (it != extents.end() && it->bytenr == r.bytenr) it->rewrite_bytes = rounded(r.bytes(), sector);
  }
  return out;
}

}  // namespace btrdedupe
