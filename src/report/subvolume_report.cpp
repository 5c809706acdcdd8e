#include "src/report/subvolume_report.h"

#include <algorithm>

#include "src/scope/subvolume_selection.h"

namespace btrdedupe {

std::map<uint64_t, SubvolumeUsage> subvolume_usage(const ScanResult& scan,
                                                   const BatchRoles& roles) {
  std::map<uint64_t, SubvolumeUsage> usage;
  for (const auto& s : scan.subvolumes) usage[s.id];
  const auto& ex = scan.extents;  // sorted by disk_bytenr
  std::vector<uint64_t> users;
  for (size_t i = 0; i < ex.size();) {
    const uint64_t bytenr = ex[i].disk_bytenr;
    uint64_t disk = 0;
    users.clear();
    bool elsewhere = false;
    for (; i < ex.size() && ex[i].disk_bytenr == bytenr; ++i) {
      if (roles.left_out(ex[i].file)) continue;
      elsewhere = elsewhere || roles.counted_before(ex[i].file);
      disk = std::max(disk, ex[i].disk_num_bytes);
      users.push_back(scan.files[ex[i].file].subvolume);
      for (uint64_t s : scan.readonly_alias_subvolumes.subvolumes_of(ex[i].file)) users.push_back(s);
    }
    if (elsewhere || users.empty()) continue;
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    for (uint64_t s : users) usage[s].referenced += disk;
    if (users.size() == 1) usage[users[0]].exclusive += disk;
  }
  return usage;
}

std::map<uint64_t, uint64_t> planned_bytes_by_subvolume(const ScanResult& scan,
                                                        const DedupePlan& plan) {
  std::map<uint64_t, uint64_t> out;
  for (const auto& round : plan.rounds)
    for (const auto& d : round.destinations) out[scan.files[d.file].subvolume] += round.length;
  return out;
}

std::vector<SubvolumeFigures> subvolume_figures(
    const ScanResult& before, const ScanResult* after,
    const std::map<uint64_t, uint64_t>& planned,
    const std::map<uint64_t, uint64_t>& deduped_by_subvolume,
    const std::vector<btrfs::Subvolume>& all) {
  const auto usage_before = subvolume_usage(before);
  if (!after) return subvolume_figures(before.subvolumes, usage_before, nullptr, planned,
                                       deduped_by_subvolume, all);
  const auto usage_after = subvolume_usage(*after);
  return subvolume_figures(before.subvolumes, usage_before, &usage_after, planned,
                           deduped_by_subvolume, all);
}

std::vector<SubvolumeFigures> subvolume_figures(
    const std::vector<btrfs::Subvolume>& scanned,
    const std::map<uint64_t, SubvolumeUsage>& usage_before,
    const std::map<uint64_t, SubvolumeUsage>* usage_after,
    const std::map<uint64_t, uint64_t>& planned,
    const std::map<uint64_t, uint64_t>& deduped_by_subvolume,
    const std::vector<btrfs::Subvolume>& all) {
  const auto& after = usage_after ? *usage_after : usage_before;
  std::vector<SubvolumeFigures> out;
  for (const auto& s : scanned) {
    SubvolumeFigures f;
    f.id = s.id;
    f.path = subvolume_display_path(s);
    f.readonly = s.readonly;
    f.snapshot_of = snapshot_source(s, all.empty() ? scanned : all);
    f.generation = s.generation;
    if (auto it = usage_before.find(s.id); it != usage_before.end()) f.before = it->second;
    if (auto it = after.find(s.id); it != after.end()) f.after = it->second;
    if (auto it = planned.find(s.id); it != planned.end()) f.planned_bytes = it->second;
    if (auto it = deduped_by_subvolume.find(s.id); it != deduped_by_subvolume.end())
      f.deduped_bytes = it->second;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace btrdedupe
