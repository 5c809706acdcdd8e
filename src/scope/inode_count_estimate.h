// How many regular files a subvolume holds, estimated from a few dozen single-item probes
// instead of a walk: what a run needs to know before it reads a tree whole.
//
// Why: a run without a count of its files (no hashfile) read its trees whole up to
// JobOptions::whole_run_files and, past that, threw the read away for windows: at 4 copies
// of linux-source, 180,000 files read for nothing, ~1 s cold. Inode numbers tell the size
// for almost nothing: btrfs hands them out in ascending order, so the highest objectid
// bounds how many inodes there have been, and a probe at evenly spaced numbers tells what
// share of them are regular files now.
//
// Contract: estimate_regular_files() reads items only (INODE_ITEMs and the highest key),
// at most kEstimateProbes + ~64 searches, each down to one leaf. A subvolume with no more
// inode numbers than probes is counted exactly. Otherwise the figure is an estimate: a
// tree whose inode numbers were mostly freed again (files deleted) or are directories in
// a pattern that the probes' spacing hits can be off by more than the spread of a random
// sample; callers take it as a hint and keep a check of their own (a whole read keeps its
// cap). 0 when the tree is empty or cannot be searched.
#pragma once

#include <cstdint>
#include <vector>

#include "btrfs/tree_source.h"

namespace btrdedupe {

inline constexpr unsigned kEstimateProbes = 128;

// The highest objectid holding an item in the subvolume's tree (0 when empty or on error):
// about 64 single-item probes, most on cached nodes.
uint64_t highest_objectid(btrfs::TreeSource& trees, uint64_t subvolume);

// The regular files of `subvolume`'s tree (any names, any size: as a whole read counts
// them against its cap).
uint64_t estimate_regular_files(btrfs::TreeSource& trees, uint64_t subvolume,
                                unsigned probes = kEstimateProbes);

// One subvolume a whole read would reach, estimated: its regular files, and whether its
// files fold into others' (a read-only snapshot, when the run folds them).
struct SubvolumeFiles {
  uint64_t files = 0;
  bool folds = false;
};

// What a whole read of `subvolumes` would count against its cap, erring low: it keeps every
// file of the subvolumes that do not fold, and counts a folding snapshot's files while it
// reads that tree (keeping then only those that did not fold), so it reaches at least the
// larger of the two.
uint64_t files_held_at_once(const std::vector<SubvolumeFiles>& subvolumes);

}  // namespace btrdedupe
