// Space really freed: a dedupe frees disk space only when a physical extent loses its last
// reference, and then its whole disk_num_bytes (the compressed size of a compressed extent),
// which is what `btrfs filesystem df` shows move. Sharing part of an extent frees nothing
// ("bookends"). Here: what a plan would free by that rule, which extents it may free, and
// after the dedupe, which of those the extent tree no longer holds.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "btrfs/result.h"
#include "src/plan/dedupe_plan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// A physical extent that a plan's destination ranges reference.
struct PhysicalExtent {
  uint64_t bytenr = 0;
  uint64_t disk_bytes = 0;   // disk_num_bytes: what freeing it gives back
  uint64_t subvolume = 0;    // of the first destination file referencing it
  // Every reference the scan saw is inside a destination range, and no folded read-only
  // snapshot copy holds it: the plan frees it, unless files outside the scan reference it.
  bool freed_by_plan = false;
  // A round's source range lies on it: its destinations will reference it, so the plan
  // keeps it, however its own references are covered (src/plan/chained_sources.h makes this rare).
  bool source = false;
  // A prealloc item also names it (PassedOver::prealloc_bytenrs): it stays allocated.
  bool unwritten_refs = false;
  // Not freed by the plan alone, but once its small unique remainder of these bytes is
  // rewritten (src/plan/remainder_plan.h) it would be: predicted_freed counts it, less them.
  uint64_t rewrite_bytes = 0;
  // A reference the scan could not vouch for (FileExtent::refs_unknown, a path walk's):
  // never counted as freed, by the plan or after.
  bool refs_unknown = false;
};

// The extents the plan's source ranges lie on (every one a range spans), sorted, once each.
std::vector<uint64_t> source_extents(const ScanResult& scan, const DedupePlan& plan);

// The extents referenced by the plan's destination ranges, sorted by bytenr, once each.
std::vector<PhysicalExtent> destination_extents(const ScanResult& scan, const DedupePlan& plan);

struct FreedSpace {
  uint64_t bytes = 0;                           // disk bytes of extents gone
  uint64_t extents = 0;
  std::map<uint64_t, uint64_t> by_subvolume;    // bytes, by the destination's subvolume
  void add(const FreedSpace& more);
};

// What the plan frees by the rule above (the files outside the scan not known), the
// remainders it rewrites included.
FreedSpace predicted_freed(const std::vector<PhysicalExtent>& extents);

// After the dedupe's transaction committed (syncfs): the extents the tree no longer holds,
// less `rewritten` (by subvolume): what rewritten remainders' new extents take (never
// below zero). `scanned_at`: the filesystem's generation when the scan began (0: not
// known); an extent item at the same address from a later transaction is a new one, and
// the old was freed. fd: any fd on the filesystem.
btrfs::Result<FreedSpace> measure_freed(int fd, const std::vector<PhysicalExtent>& extents,
                                        const std::map<uint64_t, uint64_t>& rewritten = {},
                                        uint64_t scanned_at = 0);

// The same from the extent tree's answer: allocated[i] says whether extents[i] is still
// there (btrfs::extents_allocated).
FreedSpace freed_of(const std::vector<PhysicalExtent>& extents, const std::vector<bool>& allocated,
                    const std::map<uint64_t, uint64_t>& rewritten = {});

// Whether each of `extents` is still allocated, as measure_freed reads it.
btrfs::Result<std::vector<bool>> still_allocated(int fd, const std::vector<PhysicalExtent>& extents,
                                                 uint64_t scanned_at = 0);

}  // namespace btrdedupe
