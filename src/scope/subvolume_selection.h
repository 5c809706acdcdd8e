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

#include "btrfs/fs_info.h"
#include "btrfs/result.h"
#include "btrfs/subvolume.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// The subvolume whose top directory a path is, and the id of its filesystem.
struct OpenedSubvolumeRoot {
  uint64_t id = 0;
  std::string fsid;
};

// What choosing and listing subvolumes asks of a filesystem and of the machine's mounts.
// The machine's own (machine_subvolume_ground) asks libbtrfsutil, btrfs ioctls and
// /proc/self/mountinfo; unit tests describe a filesystem and its mounts instead.
// Contract: calls come from one thread.
class SubvolumeGround {
 public:
  virtual ~SubvolumeGround();
  // Every subvolume of the filesystem of `path`, the top level first
  // (btrfs::list_subvolumes). Errors: no privilege, not btrfs.
  virtual btrfs::Result<std::vector<btrfs::Subvolume>> subvolumes(const std::string& path) = 0;
  // The filesystem `path` is on. Errors: it cannot be opened, or is not on btrfs.
  virtual btrfs::Result<btrfs::FsInfo> fs_info(const std::string& path) = 0;
  // The mount table as /proc/self/mountinfo gives it (proc(5)): a mount a line.
  virtual std::string mount_table() = 0;
  // `path` absolute and without symlinks (realpath(3)), or as given when it cannot be.
  virtual std::string real_path(const std::string& path) = 0;
  // The proof that `path` is the top directory of a subvolume, by opening it: which
  // subvolume, of which filesystem. Errors: it cannot be opened, is not on btrfs, or is
  // another directory.
  virtual btrfs::Result<OpenedSubvolumeRoot> subvolume_root(const std::string& path) = 0;
  // The trees of `subvolumes` read whole, as one scan (scan_subvolumes; no file opened).
  virtual btrfs::Result<ScanResult> scan(const std::string& fs_path,
                                         const std::vector<SubvolumeRoot>& subvolumes,
                                         const ScanOptions& options) = 0;
};

// The machine's: libbtrfsutil, ioctls on opened directories, /proc/self/mountinfo.
SubvolumeGround& machine_subvolume_ground();

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
                                               const std::string& fsid,
                                               SubvolumeGround& ground);

// Where each subvolume of the filesystem of `fs_path` is reached through its mounts (the
// ground's mount table): the directory that is the subvolume's root, proved by the ground
// (SubvolumeGround::subvolume_root). Subvolumes no mount shows are absent from the result.
// `only`, when given, limits the search to those ids (nothing else is opened).
btrfs::Result<std::vector<SubvolumeRoot>> reachable_subvolumes(
    const std::string& fs_path, const std::vector<btrfs::Subvolume>& all,
    SubvolumeGround& ground, const std::set<uint64_t>* only = nullptr);

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
                                                   const SubvolumeSelection& selection,
                                                   SubvolumeGround& ground);

// A subvolume's path for people: relative to the top level, "<top level>" for id 5.
std::string subvolume_display_path(const btrfs::Subvolume& subvolume);

// The path of the subvolume `subvolume` was snapshotted from ("" when it is not a snapshot,
// "<deleted>" when that subvolume is gone).
std::string snapshot_source(const btrfs::Subvolume& subvolume,
                            const std::vector<btrfs::Subvolume>& all);

}  // namespace btrdedupe
