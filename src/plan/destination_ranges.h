// The file ranges a plan's rounds write into (their destinations), by file, as sorted and
// merged byte intervals: what freed_space and the remainder planner measure extents by.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "src/plan/dedupe_plan.h"

namespace btrdedupe {

struct Interval {
  uint64_t start = 0, end = 0;  // [start, end)
};

// Sorted, merged intervals by file, in two flat vectors: a plan of whole copies has a
// destination in every other file, and a map of a vector each cost ~70 bytes a file in
// allocations at the run's peak.
class RangesByFile {
 public:
  // The intervals of `file` (empty: none).
  std::span<const Interval> of(uint32_t file) const;
  // Adds an interval; then finish() sorts and merges them.
  void add(uint32_t file, Interval i) { pending_.push_back({file, i}); }
  void finish();
  bool empty() const { return files_.empty(); }

 private:
  std::vector<std::pair<uint32_t, Interval>> pending_;
  std::vector<std::pair<uint32_t, uint32_t>> files_;  // (file, first interval), by file
  std::vector<Interval> all_;
};

// Destination ranges of the plan by file, sorted and merged.
RangesByFile destination_ranges(const DedupePlan& plan);

// How much of [start, end) the sorted, merged intervals cover: none, part, or all of it.
enum class Cover { None, Part, All };
Cover covered(std::span<const Interval> v, uint64_t start, uint64_t end);

// The parts of [start, end) the sorted, merged intervals do not cover, in order.
std::vector<Interval> uncovered(std::span<const Interval> v, uint64_t start, uint64_t end);

}  // namespace btrdedupe
