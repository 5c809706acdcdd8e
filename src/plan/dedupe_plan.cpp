#include "src/plan/dedupe_plan.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "src/plan/chained_sources.h"
#include "src/read/file_extent_index.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

class ExtentRefCounts {
 public:
  explicit ExtentRefCounts(const ScanResult& scan) {
    for (const auto& e : scan.extents) ++refs_[e.disk_bytenr];
  }
  uint64_t of(uint64_t bytenr) const {
    auto it = refs_.find(bytenr);
    return it == refs_.end() ? 0 : it->second;
  }

 private:
  std::unordered_map<uint64_t, uint64_t> refs_;
};

size_t choose_target_with(const ScanResult& scan, const DuplicateGroup& g,
                          const ExtentRefCounts& refs, const FileExtentIndex& index,
                          const BatchRoles* roles) {
  // Per layout: the references of its first extent, and whether a member is read-only.
  std::map<uint32_t, std::pair<uint64_t, bool>> layout_info;
  const uint64_t first_data = g.data.empty() ? 0 : g.data.front().offset;  // past a hole
  for (const auto& m : g.members) {
    const FileExtent* e = index.at(m.file, m.offset + first_data);
    auto& [count, ro] = layout_info[m.layout];
    count = std::max(count, e ? refs.of(e->disk_bytenr) : 0);
    ro = ro || readonly_subvolume(scan, scan.files[m.file].subvolume) ||
         scan.files[m.file].readonly_alias || scan.files[m.file].source_only();
  }
  size_t best = 0;
  auto key = [&](size_t i) {
    const auto& m = g.members[i];
    const auto& [count, layout_ro] = layout_info.at(m.layout);
    const bool ro = readonly_subvolume(scan, scan.files[m.file].subvolume);
    // Larger is better for the first three; fewer extents and earlier index win after.
    // A partial group's ranges lie inside larger files that other groups share too: one
    // order for all of them (the matcher's, earliest file first) keeps whole extents as
    // sources, where the fewest-extents rule would pick each group's source on its own.
    const int64_t extents = g.whole_file ? -static_cast<int64_t>(m.extents) : 0;
    const bool earlier = roles && roles->source_only(m.file);
    return std::make_tuple(earlier, count, layout_ro, ro, extents, -static_cast<int64_t>(i));
  };
  for (size_t i = 1; i < g.members.size(); ++i)
    if (key(i) > key(best)) best = i;
  return best;
}

// Rounds of at most `round` bytes over `data` (relative to each member's offset), each
// against up to max_dest destinations.
void add_rounds(const FileExtentIndex& index, uint32_t gi, const GroupMember& target,
                const std::vector<RangeRef>& dests, ByteRange data, uint64_t round,
                size_t max_dest, DedupePlan& plan) {
  for (uint64_t done = data.offset; done < data.offset + data.length; done += round) {
    const uint64_t len = std::min(round, data.offset + data.length - done);
    for (size_t d = 0; d < dests.size(); d += max_dest) {
      DedupeRound r;
      r.source = {target.file, target.offset + done};
      r.length = len;
      r.group = gi;
      r.disk_order = index.disk_address(target.file, target.offset + done);
      for (size_t k = d; k < std::min(dests.size(), d + max_dest); ++k)
        r.destinations.push_back({dests[k].file, dests[k].offset + done});
      plan.planned_bytes += len * r.destinations.size();
      plan.rounds.push_back(std::move(r));
    }
  }
}

}  // namespace

size_t choose_target(const ScanResult& scan, const DuplicateGroup& group) {
  return choose_target_with(scan, group, ExtentRefCounts(scan), FileExtentIndex(scan), nullptr);
}

DedupePlan plan_rounds(const ScanResult& scan, const MatchResult& matches,
                       const PlanOptions& options) {
  DedupePlan plan;
  const ExtentRefCounts refs(scan);
  const FileExtentIndex index(scan);
  const uint64_t ss = scan.fs.sectorsize ? scan.fs.sectorsize : 4096;
  const uint64_t round = std::max<uint64_t>(ss, options.round_bytes / ss * ss);
  const size_t max_dest = std::max<size_t>(1, options.max_destinations);

  for (uint32_t gi = 0; gi < matches.groups.size(); ++gi) {
    const auto& g = matches.groups[gi];
    const size_t t = choose_target_with(scan, g, refs, index, options.roles);
    const auto& target = g.members[t];
    std::vector<RangeRef> dests;
    std::unordered_set<uint64_t> seen;  // (file, offset) once, even if listed twice
    for (size_t i = 0; i < g.members.size(); ++i) {
      const auto& m = g.members[i];
      if (i == t || m.layout == target.layout) continue;
      // A source only: never written to.
      if (scan.files[m.file].source_only()) continue;
      if (options.roles && options.roles->source_only(m.file)) continue;
      if (!options.dedupe_readonly && readonly_subvolume(scan, scan.files[m.file].subvolume)) {
        ++plan.readonly_members_skipped;
        continue;
      }
      // Its extents stay referenced by read-only snapshots: sharing it frees nothing now
      // (a later run, after those snapshots are deleted, will).
      if (!options.dedupe_readonly && scan.files[m.file].readonly_alias) {
        ++plan.readonly_members_skipped;
        continue;
      }
      if (seen.insert((uint64_t{m.file} << 40) ^ m.offset).second) dests.push_back({m.file, m.offset});
    }
    if (dests.empty()) continue;
    // Only the data: a sparse whole-file group's members have their holes at the same
    // places (or they would not be whole-file duplicates: a target with data where a
    // destination has a hole cannot happen), and holes are never given to the kernel.
    // Partial groups are data throughout (runs need every sector's sum).
    const std::vector<ByteRange> all{{0, g.length}};
    for (const ByteRange& data : g.data.empty() ? all : g.data)
      add_rounds(index, gi, target, dests, data, round, max_dest, plan);
  }
  plan.chained_rounds = take_sources_past_destinations(plan, index).rounds_changed;
  std::stable_sort(plan.rounds.begin(), plan.rounds.end(),
                   [](const DedupeRound& a, const DedupeRound& b) { return a.disk_order < b.disk_order; });
  if (options.most_valuable_first) order_most_valuable_first(plan);
  return plan;
}

std::vector<uint64_t> group_values(const DedupePlan& plan) {
  std::vector<uint64_t> value;
  for (const auto& r : plan.rounds) {
    if (r.group >= value.size()) value.resize(r.group + 1, 0);
    value[r.group] += r.length * r.destinations.size();
  }
  return value;
}

void order_most_valuable_first(DedupePlan& plan) {
  const auto value = group_values(plan);
  std::stable_sort(plan.rounds.begin(), plan.rounds.end(),
                   [&](const DedupeRound& a, const DedupeRound& b) {
                     if (value[a.group] != value[b.group]) return value[a.group] > value[b.group];
                     return a.group < b.group;
                   });
}

}  // namespace btrdedupe
