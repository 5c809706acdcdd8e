// Round planning: from duplicate groups to FIDEDUPERANGE calls. Pure logic, unit-tested
// without a disk.
//
// Target (source) choice per group, in order of preference:
//   0. in a window, an earlier window's file (BatchRoles::source_only): it is never a
//      destination there, so a group it is in keeps it;
//   1. the layout whose physical extent is already referenced the most in the scan (so the
//      extents that stay alive are the ones many files and snapshots hold anyway);
//   2. a layout with a member in a read-only subvolume, or holding data that read-only
//      snapshots also hold (ScannedFile::readonly_alias), or outside the run's roots
//      (ScannedFile::outside_roots): those extents stay alive anyway;
//   3. in a whole-file group, the least fragmented member (fewest extents in the range);
//      partial groups skip this rule, so that all of them keep the matcher's order;
//   4. the oldest: lowest scan order (stable and deterministic).
// Destinations are the members whose layout differs from the target's, but for earlier
// windows' files (role EarlierTwin or EarlierGroupedTwin), which are only sources. Members in
// read-only subvolumes are never destinations unless allowed, nor are members whose extents
// read-only snapshots also hold (sharing them would free nothing); members already sharing
// the target's storage are never touched. Members outside the run's roots are never
// destinations, whatever the options.
#pragma once

#include <cstdint>
#include <vector>

#include "btrfs/dedupe_range.h"
#include "src/match/batch_roles.h"
#include "src/match/duplicate_match.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct RangeRef {
  uint32_t file = 0;
  uint64_t offset = 0;
};

// One FIDEDUPERANGE call: source range against up to kMaxDedupeDestinations destinations.
struct DedupeRound {
  RangeRef source;
  uint64_t length = 0;
  std::vector<RangeRef> destinations;
  uint64_t disk_order = 0;  // source's disk address: rounds run in physical order
  uint32_t group = 0;       // index of the DuplicateGroup it came from
};

struct PlanOptions {
  uint64_t round_bytes = 16ULL << 20;  // sector multiple
  size_t max_destinations = btrfs::kMaxDedupeDestinations;
  bool dedupe_readonly = false;        // allow destinations in read-only snapshots
  // The batch's roles (by file index; nullptr: all its own): earlier windows' files are
  // sources only (BatchRoles::source_only).
  const BatchRoles* roles = nullptr;
  // A time-boxed run (--max-runtime): the groups that would share the most bytes first
  // (order_most_valuable_first), so a run cut short has done its most valuable work.
  bool most_valuable_first = false;
};

struct DedupePlan {
  std::vector<DedupeRound> rounds;          // in physical order (unless most_valuable_first)
  uint64_t planned_bytes = 0;               // sum of length * destinations
  uint64_t readonly_members_skipped = 0;    // destinations left alone: read-only subvolume
  // Rounds whose source another round's destinations covered, taken from that round's
  // source instead (src/plan/chained_sources.h).
  uint64_t chained_rounds = 0;
};

// Index of the member chosen as source for `group` (by the rule above).
size_t choose_target(const ScanResult& scan, const DuplicateGroup& group);

DedupePlan plan_rounds(const ScanResult& scan, const MatchResult& matches,
                       const PlanOptions& options);

// Bytes each group's rounds would share (length x destinations), by group index.
std::vector<uint64_t> group_values(const DedupePlan& plan);
// Reorders the rounds by their group's value, largest first; a group's rounds stay
// together and keep their physical order, and equal values keep group order.
void order_most_valuable_first(DedupePlan& plan);

}  // namespace btrdedupe
