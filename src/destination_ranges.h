// The file ranges a plan's rounds write into (their destinations), by file, as sorted and
// merged byte intervals: what freed_space and the remainder planner measure extents by.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "src/dedupe_plan.h"

namespace btrdedupe {

struct Interval {
  uint64_t start = 0, end = 0;  // [start, end)
};

using RangesByFile = std::unordered_map<uint32_t, std::vector<Interval>>;

// Destination ranges of the plan by file, sorted and merged.
RangesByFile destination_ranges(const DedupePlan& plan);

// How much of [start, end) the sorted, merged intervals cover: none, part, or all of it.
enum class Cover { None, Part, All };
Cover covered(const std::vector<Interval>& v, uint64_t start, uint64_t end);

// The parts of [start, end) the sorted, merged intervals do not cover, in order.
std::vector<Interval> uncovered(const std::vector<Interval>& v, uint64_t start, uint64_t end);

}  // namespace btrdedupe
