// Planning the rewrite of small remainders (docs/design.md, "Rewriting small remainders").
//
// A physical extent stays allocated, whole, while anything references any part of it. When
// the plan's destination ranges cover most of a destination's extent and what is still
// referenced outside them (the remainder) is small, the extent is freed anyway by writing
// the remainder into a new extent and sharing it back onto the file (src/dedupe/remainder_rewrite.h).
// Pure logic on the scan and the plan, unit-tested without a disk.
//
// The rule, per extent the plan's destinations touch but do not free:
//   - every reference the scan saw is in a file that may be written to: not in a read-only
//     subvolume, not standing for folded read-only snapshot copies, not outside the roots;
//   - the remainder (the referenced bytes outside destination ranges) is at most a quarter
//     of the extent's bytes and at most max_remainder_bytes: each rewrite frees at least
//     three times what it writes;
//   - no two references share remainder bytes (rewriting both would write them twice and
//     unshare them);
//   - within the run's write budget: extents that free the most per byte written first;
//     the others are counted as skipped for the budget.
// References outside the scan cannot be seen here: the rewrite checks, after the rounds,
// that the extent's references are exactly the remainders (LOGICAL_INO) before writing.
// A remainder a round reads from is rewritten before the rounds instead (before_rounds).
#pragma once

#include <cstdint>
#include <vector>

#include "src/plan/dedupe_plan.h"
#include "src/plan/freed_space.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct RemainderRules {
  uint64_t max_remainder_bytes = 8ULL << 20;  // per extent
  unsigned max_remainder_share = 4;           // remainder <= extent bytes / this
  uint64_t budget_bytes = 256ULL << 20;       // bytes written per run and filesystem
};

// One range of a file that references the extent outside every destination range: it
// starts on a sector boundary and ends on one or at the file's EOF.
struct RemainderRange {
  uint32_t file = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct RemainderExtent {
  uint64_t bytenr = 0;
  uint64_t disk_bytes = 0;
  std::vector<RemainderRange> ranges;  // by file, then offset
  uint64_t bytes() const;              // the remainder's bytes: what its rewrite writes
  // A round reads from the remainder (PhysicalExtent::source): rewritten before the rounds,
  // so that their destinations share the copy, not the old extent. Its references are then
  // checked against all those the scan saw (`references`: where each begins), not against
  // the remainder alone.
  bool before_rounds = false;
  std::vector<RemainderRange> references;
};

struct RemainderPlan {
  std::vector<RemainderExtent> extents;  // within the budget, by bytenr
  uint64_t bytes = 0;                    // what they write
  uint64_t skipped_for_budget = 0;       // extents the rule allowed beyond the budget
  uint64_t bytes_skipped_for_budget = 0; // their remainders' bytes
};

// Marks the extents it plans in `extents` (PhysicalExtent::rewrite_bytes).
RemainderPlan plan_remainders(const ScanResult& scan, const DedupePlan& plan,
                              std::vector<PhysicalExtent>& extents, const RemainderRules& rules);

}  // namespace btrdedupe
