#include "src/destination_ranges.h"

#include <algorithm>

namespace btrdedupe {

RangesByFile destination_ranges(const DedupePlan& plan) {
  RangesByFile by_file;
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

Cover covered(const std::vector<Interval>& v, uint64_t start, uint64_t end) {
  auto it = std::upper_bound(v.begin(), v.end(), start,
                             [](uint64_t s, const Interval& i) { return s < i.start; });
  if (it != v.begin() && std::prev(it)->end > start) {
    if (std::prev(it)->end >= end) return Cover::All;
    return Cover::Part;
  }
  return it != v.end() && it->start < end ? Cover::Part : Cover::None;
}

std::vector<Interval> uncovered(const std::vector<Interval>& v, uint64_t start, uint64_t end) {
  std::vector<Interval> out;
  auto it = std::upper_bound(v.begin(), v.end(), start,
                             [](uint64_t s, const Interval& i) { return s < i.start; });
  if (it != v.begin()) --it;  // the interval that may hold `start`
  uint64_t at = start;
  for (; it != v.end() && it->start < end && at < end; ++it) {
    if (it->end <= at) continue;
    if (it->start > at) out.push_back({at, it->start});
    at = std::max(at, it->end);
  }
  if (at < end) out.push_back({at, end});
  return out;
}

}  // namespace btrdedupe
