// What a time-boxed run (--max-runtime) did and what it left for the next run, by
// duplicate group, in the order the groups were queued (most valuable first).
//
// Memory is bounded whatever the run's size: every group is counted, but only the first
// kWorkListed of each kind are listed by name. Those are the largest, since the plan
// queues the groups that would share the most bytes first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/plan/dedupe_plan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

inline constexpr size_t kWorkListed = 1000;  // groups listed by name, of each kind

// One duplicate group of a time-boxed run.
struct GroupWork {
  std::string source;         // the file its source ranges are in
  uint64_t destinations = 0;  // files whose ranges are deduped onto it
  uint64_t bytes = 0;         // bytes its rounds would share
  uint64_t bytes_left = 0;    // of those, in rounds a stop left for the next run
};

struct WorkListing {
  std::vector<GroupWork> done, left;  // at most kWorkListed each; left: bytes_left > 0
  uint64_t groups_done = 0, groups_left = 0;  // all of them, listed or not
  uint64_t bytes_done = 0, bytes_left = 0;    // shared by the rounds run / left
  bool empty() const { return groups_done == 0 && groups_left == 0; }
  // Adds another window's listing: counts add up, the lists fill up to the bound.
  void add(WorkListing&& more);
};

// The groups of `plan` (DedupeRound::group), split by whether every round of theirs was
// started (`started[i]` for round i; missing entries count as not started).
WorkListing list_work(const ScanResult& scan, const DedupePlan& plan,
                      const std::vector<uint8_t>& started);

}  // namespace btrdedupe
