// Which read-only snapshots fold into which subvolume, by inode identity. A snapshot keeps
// its origin's inode numbers, so a snapshot's file is the same file as the origin's file of
// the same inode when both map the same extents: a reader that cannot hold every file's
// layout (a windowed run) folds it by looking that one inode up, not by a layout index of
// the whole tree. Pure logic over the subvolume list; the lookups are the reader's.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "btrfs/subvolume.h"

namespace btrdedupe {

class SnapshotFamily {
 public:
  // `scanned`: the subvolumes a run reads, in the order it reads them.
  explicit SnapshotFamily(const std::vector<btrfs::Subvolume>& scanned);

  // For a read-only snapshot: the subvolumes its files may fold into, in order of
  // preference: its origin (when scanned), then the read-only snapshots of the same origin
  // read before it. A file folds into the first of them whose file of the same inode maps
  // the same extents and is in the run's scope. Empty for any other subvolume.
  const std::vector<uint64_t>& folds_into(uint64_t subvolume) const;
  // The read-only snapshots whose folds_into() names `subvolume`: the ones whose files the
  // run folds into its files, for the reader to mark those (ScannedFile::readonly_alias).
  const std::vector<uint64_t>& folded_into(uint64_t subvolume) const;
  bool empty() const { return folds_into_.empty(); }

 private:
  std::unordered_map<uint64_t, std::vector<uint64_t>> folds_into_, folded_into_;
};

}  // namespace btrdedupe
