// Plan against disk: after a dedupe, each extent the plan counted as freed (whole, or
// after its remainder's rewrite) is looked up again, and one still allocated is given the
// first reason that explains it:
//   - used_as_source: a round's source range lay on it, so the destinations that round
//     shared now reference it (src/plan/chained_sources.h keeps this from happening);
//   - not_deduped: a file still references it inside a planned destination range: a
//     round was refused, found the bytes differ, or was never made (a stop, ENOSPC);
//   - remainder_kept: a file references it only outside the destination ranges: a
//     remainder the rewrite did not write (refused, failed, over the budget);
//   - outside_scan: no file the confirmation read references it: other subvolumes,
//     snapshots or files outside the run hold it.
// So a gap between the report's "would free" and what `btrfs filesystem df` shows is
// named the day it appears. Pure logic on the plan and the two scans.
#pragma once

#include <cstdint>
#include <vector>

#include "src/plan/dedupe_plan.h"
#include "src/plan/freed_space.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct ExtentTally {
  uint64_t extents = 0, bytes = 0;
  void add(const ExtentTally& more) { extents += more.extents, bytes += more.bytes; }
  void count(uint64_t disk_bytes) { ++extents, bytes += disk_bytes; }
};

struct PlanCheck {
  ExtentTally planned;          // extents the plan frees (disk bytes, before any rewrite)
  ExtentTally freed;            // of those, gone from the extent tree
  ExtentTally used_as_source, not_deduped, remainder_kept, outside_scan;  // still there
  ExtentTally freed_unplanned;  // destination extents freed that the plan did not count
  void add(const PlanCheck& more);
  uint64_t kept_extents() const;
};

// What the plan wrote into and read from, by file identity, kept past the plan itself
// (a run frees the plan before its confirmation scan).
class PlanFootprint {
 public:
  PlanFootprint() = default;
  PlanFootprint(const ScanResult& scan, const DedupePlan& plan);

  bool source_extent(uint64_t bytenr) const;
  // Whether the destination ranges of (subvolume, inode) cover any of [start, end).
  bool in_destination(uint64_t subvolume, uint64_t inode, uint64_t start, uint64_t end) const;

 private:
  struct Range {
    uint64_t subvolume, inode, start, end;
  };
  std::vector<Range> destinations_;        // sorted, merged per file
  std::vector<uint64_t> source_extents_;   // sorted, unique
};

// `extents`: the plan's (destination_extents, with remainders marked); `allocated[i]`:
// whether extents[i] is still allocated (btrfs::extents_allocated after syncfs); `after`:
// the confirmation scan.
PlanCheck check_plan(const std::vector<PhysicalExtent>& extents,
                     const std::vector<bool>& allocated, const PlanFootprint& footprint,
                     const ScanResult& after);

}  // namespace btrdedupe
