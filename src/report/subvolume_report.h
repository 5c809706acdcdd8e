// Per-subvolume figures: what each subvolume holds on disk, what only it holds, what was
// (or would be) deduped into it. Exclusive bytes mean what qgroups mean by them: the
// on-disk size of extents that no other subvolume references (so, what deleting the
// subvolume would free), counted among the subvolumes scanned. Read-only snapshot files
// folded into an identical file (ScanResult::readonly_alias_subvolumes) still count as
// references of their snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "btrfs/subvolume.h"
#include "src/match/batch_roles.h"
#include "src/plan/dedupe_plan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct SubvolumeUsage {
  uint64_t referenced = 0;  // on-disk bytes of the distinct extents its files use
  uint64_t exclusive = 0;   // of which no other scanned subvolume uses any part
};

// Every subvolume of `scan` (those without data too), by id. roles (by file index; empty:
// all the batch's own): data that files an earlier usage counted reference
// (BatchRoles::counted_before, a window's twins from earlier windows) is left out here;
// files another window counts (BatchRoles::left_out) are as if not in `scan`.
std::map<uint64_t, SubvolumeUsage> subvolume_usage(const ScanResult& scan,
                                                   const BatchRoles& roles = {});

// Bytes the plan dedupes into each subvolume (its destinations'), by id.
std::map<uint64_t, uint64_t> planned_bytes_by_subvolume(const ScanResult& scan,
                                                        const DedupePlan& plan);

struct SubvolumeFigures {
  uint64_t id = 0;
  std::string path;           // relative to the top level; "<top level>" for id 5
  bool readonly = false;
  std::string snapshot_of;    // path of the subvolume it is a snapshot of ("" if none)
  uint64_t generation = 0;    // when scanned
  SubvolumeUsage before, after;  // after: re-read after the dedupe (= before without one)
  uint64_t planned_bytes = 0;    // what the plan dedupes into it (-r without -d: potential)
  uint64_t deduped_bytes = 0;    // what the kernel deduped into it
  // Disk space of its files' extents that the dedupe freed (measured in the extent tree),
  // and that the plan would free (src/plan/freed_space.h), by the destination's subvolume.
  uint64_t freed_bytes = 0, would_free_bytes = 0;
};

// One entry per subvolume of `before`, in scan order. `after` may be null (no dedupe);
// `planned`: planned_bytes_by_subvolume() (taken before the plan is freed);
// `all` (every subvolume of the filesystem) names snapshots' origins.
std::vector<SubvolumeFigures> subvolume_figures(
    const ScanResult& before, const ScanResult* after,
    const std::map<uint64_t, uint64_t>& planned,
    const std::map<uint64_t, uint64_t>& deduped_by_subvolume,
    const std::vector<btrfs::Subvolume>& all);
// The same from usages taken earlier (subvolume_usage()), so the scans' extents can be
// freed before: `scanned` is before.subvolumes; `after` may be null.
std::vector<SubvolumeFigures> subvolume_figures(
    const std::vector<btrfs::Subvolume>& scanned,
    const std::map<uint64_t, SubvolumeUsage>& usage_before,
    const std::map<uint64_t, SubvolumeUsage>* usage_after,
    const std::map<uint64_t, uint64_t>& planned,
    const std::map<uint64_t, uint64_t>& deduped_by_subvolume,
    const std::vector<btrfs::Subvolume>& all);

}  // namespace btrdedupe
