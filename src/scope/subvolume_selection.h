// Choosing subvolumes: --subvol ID|PATH, --exclude-subvol ID|PATH, --all-subvols.
//
// With --subvol or --all-subvols the selection is flat: exactly the chosen subvolumes are
// scanned, each whole (a nested subvolume only when chosen too), and the PATHs only name
// the filesystem. Each chosen subvolume is reached through a mount of the filesystem that
// shows it (its files must be opened to be read or deduped); --exclude-subvol takes
// subvolumes out of the set. Without them, --exclude-subvol prunes the usual walk of PATH:
// an excluded subvolume is not read, nor any subvolume reached through it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "btrfs/result.h"
#include "btrfs/subvolume.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct SubvolumeSelection {
  std::vector<std::string> include;  // --subvol, as given: a subvolume id or a path
  std::vector<std::string> exclude;  // --exclude-subvol, as given
  bool all = false;                  // --all-subvols
  bool flat() const { return all || !include.empty(); }
  bool empty() const { return !flat() && exclude.empty(); }
};

// A word of --subvol: a number is a subvolume id (write ./257 for a directory named 257);
// anything else is a path, which must be the top directory of a subvolume of the
// filesystem `all` lists (fsid: that filesystem's, to refuse paths on another one).
btrfs::Result<uint64_t> resolve_subvolume_word(const std::string& word,
                                               const std::vector<btrfs::Subvolume>& all,
                                               const std::string& fsid);

// Where each subvolume of the filesystem of `fs_path` is reached through its mounts (read
// from /proc/self/mountinfo): the directory that is the subvolume's root, checked by opening
// it. Subvolumes no mount shows are absent from the result. `only`, when given, limits the
// search to those ids (nothing else is opened).
btrfs::Result<std::vector<SubvolumeRoot>> reachable_subvolumes(
    const std::string& fs_path, const std::vector<btrfs::Subvolume>& all,
    const std::set<uint64_t>* only = nullptr);

struct ResolvedSelection {
  std::vector<btrfs::Subvolume> all;    // every subvolume of the filesystem
  std::vector<SubvolumeRoot> roots;     // flat: the subvolumes to scan, writable ones first
  std::set<uint64_t> excluded;          // --exclude-subvol, by id
  std::vector<uint64_t> included;       // --subvol, by id, in the order given
  std::vector<std::string> errors;      // chosen (--subvol) but not reachable: not scanned
  std::vector<std::string> notes;       // --all-subvols: subvolumes left out, and why
};

// Resolves `selection` on the filesystem of `fs_path`. Fails on a word that names no
// subvolume of it.
btrfs::Result<ResolvedSelection> resolve_selection(const std::string& fs_path,
                                                   const SubvolumeSelection& selection);

// A subvolume's path for people: relative to the top level, "<top level>" for id 5.
std::string subvolume_display_path(const btrfs::Subvolume& subvolume);

// The path of the subvolume `subvolume` was snapshotted from ("" when it is not a snapshot,
// "<deleted>" when that subvolume is gone).
std::string snapshot_source(const btrfs::Subvolume& subvolume,
                            const std::vector<btrfs::Subvolume>& all);

}  // namespace btrdedupe
