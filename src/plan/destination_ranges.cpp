#include "src/plan/destination_ranges.h"

#include <algorithm>
#include <iterator>

namespace btrdedupe {

void RangesByFile::finish() {
  std::sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.start < b.second.start;
  });
  for (const auto& [file, i] : pending_) {
    if (!files_.empty() && files_.back().first == file && i.start <= all_.back().end) {
      all_.back().end = std::max(all_.back().end, i.end);
      continue;
    }
    if (files_.empty() || files_.back().first != file)
      files_.push_back({file, static_cast<uint32_t>(all_.size())});
    all_.push_back(i);
  }
  pending_ = {};
}

std::span<const Interval> RangesByFile::of(uint32_t file) const {
  const auto it = std::lower_bound(files_.begin(), files_.end(), file,
                                   [](const auto& f, uint32_t want) { return f.first < want; });
  if (it == files_.end() || it->first != file) return {};
  const size_t end = std::next(it) == files_.end() ? all_.size() : std::next(it)->second;
  return {all_.data() + it->second, end - it->second};
}

RangesByFile destination_ranges(const DedupePlan& plan) {
  RangesByFile by_file;
  for (const auto& round : plan.rounds)
    for (const auto& d : round.destinations) by_file.add(d.file, {d.offset, d.offset + round.length});
  by_file.finish();
  return by_file;
}

Cover covered(std::span<const Interval> v, uint64_t start, uint64_t end) {
  auto it = std::upper_bound(v.begin(), v.end(), start,
                             [](uint64_t s, const Interval& i) { return s < i.start; });
  if (it != v.begin() && std::prev(it)->end > start) {
    if (std::prev(it)->end >= end) return Cover::All;
    return Cover::Part;
  }
  return it != v.end() && it->start < end ? Cover::Part : Cover::None;
}

std::vector<Interval> uncovered(std::span<const Interval> v, uint64_t start, uint64_t end) {
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
