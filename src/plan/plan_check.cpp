#include "src/plan/plan_check.h"

#include <algorithm>
#include <tuple>


namespace btrdedupe {

void PlanCheck::add(const PlanCheck& more) {
  planned.add(more.planned);
  freed.add(more.freed);
  used_as_source.add(more.used_as_source);
  not_deduped.add(more.not_deduped);
  remainder_kept.add(more.remainder_kept);
  outside_scan.add(more.outside_scan);
  freed_unplanned.add(more.freed_unplanned);
}

uint64_t PlanCheck::kept_extents() const {
  return used_as_source.extents + not_deduped.extents + remainder_kept.extents +
         outside_scan.extents;
}

PlanFootprint::PlanFootprint(const ScanResult& scan, const DedupePlan& plan) {
  // By file identity, not index: the confirmation scan that it is checked against numbers
  // its files anew.
  for (const auto& r : plan.rounds)
    for (const auto& d : r.destinations) {
      const ScannedFile& f = scan.files[d.file];
      destinations_.push_back({f.subvolume, f.inode, d.offset, d.offset + r.length});
    }
  std::sort(destinations_.begin(), destinations_.end(), [](const Range& a, const Range& b) {
    return std::tie(a.subvolume, a.inode, a.start) < std::tie(b.subvolume, b.inode, b.start);
  });
  size_t kept = 0;  // merged: in_destination needs them disjoint and ordered by end too
  for (const auto& r : destinations_)
    if (kept && destinations_[kept - 1].subvolume == r.subvolume &&
        destinations_[kept - 1].inode == r.inode && destinations_[kept - 1].end >= r.start)
      destinations_[kept - 1].end = std::max(destinations_[kept - 1].end, r.end);
    else
      destinations_[kept++] = r;
  destinations_.resize(kept);
  destinations_.shrink_to_fit();
  source_extents_ = source_extents(scan, plan);
}

bool PlanFootprint::source_extent(uint64_t bytenr) const {
  return std::binary_search(source_extents_.begin(), source_extents_.end(), bytenr);
}

bool PlanFootprint::in_destination(uint64_t subvolume, uint64_t inode, uint64_t start,
                                   uint64_t end) const {
  // The first range of the file that ends past `start`.
  auto it = std::lower_bound(destinations_.begin(), destinations_.end(),
                             std::make_tuple(subvolume, inode, start),
                             [](const Range& r, const std::tuple<uint64_t, uint64_t, uint64_t>& k) {
                               return std::tie(r.subvolume, r.inode, r.end) <= k;
                             });
  return it != destinations_.end() && it->subvolume == subvolume && it->inode == inode &&
         it->start < end;
}

namespace {

// Which tally a still allocated extent goes to, by the references `after` shows.
ExtentTally PlanCheck::*reason_kept(const PhysicalExtent& e, const PlanFootprint& footprint,
                                    const ScanResult& after,
                                    const std::vector<uint32_t>& by_bytenr) {
  if (footprint.source_extent(e.bytenr)) return &PlanCheck::used_as_source;
  auto it = std::lower_bound(by_bytenr.begin(), by_bytenr.end(), e.bytenr,
                             [&](uint32_t i, uint64_t b) { return after.extents[i].disk_bytenr < b; });
  bool any = false;
  for (; it != by_bytenr.end() && after.extents[*it].disk_bytenr == e.bytenr; ++it) {
    const FileExtent& ref = after.extents[*it];
    const ScannedFile& f = after.files[ref.file];
    any = true;
    if (footprint.in_destination(f.subvolume, f.inode, ref.file_offset, ref.file_offset + ref.length))
      return &PlanCheck::not_deduped;
  }
  return any ? &PlanCheck::remainder_kept : &PlanCheck::outside_scan;
}

}  // namespace

PlanCheck check_plan(const std::vector<PhysicalExtent>& extents,
                     const std::vector<bool>& allocated, const PlanFootprint& footprint,
                     const ScanResult& after) {
  std::vector<uint32_t> by_bytenr(after.extents.size());
  for (uint32_t i = 0; i < by_bytenr.size(); ++i) by_bytenr[i] = i;
  std::stable_sort(by_bytenr.begin(), by_bytenr.end(), [&](uint32_t a, uint32_t b) {
    return after.extents[a].disk_bytenr < after.extents[b].disk_bytenr;
  });
  PlanCheck c;
  for (size_t i = 0; i < extents.size() && i < allocated.size(); ++i) {
    const PhysicalExtent& e = extents[i];
    const bool planned = e.freed_by_plan || e.rewrite_bytes;
    if (!planned) {
      if (!allocated[i]) c.freed_unplanned.count(e.disk_bytes);
      continue;
    }
    c.planned.count(e.disk_bytes);
    if (!allocated[i])
      c.freed.count(e.disk_bytes);
    else
      (c.*reason_kept(e, footprint, after, by_bytenr)).count(e.disk_bytes);
  }
  return c;
}

}  // namespace btrdedupe
