// The scan of an incremental run: instead of reading every subvolume tree whole, find the
// inodes each subvolume changed since a generation (TREE_SEARCH_V2 with min_transid: only
// leaves written since are read) and put single files into a ScanResult one by one, each
// read with a targeted search and placed under the roots exactly as scan_tree and
// scan_subvolumes would place it (path, --exclude, --min-size, nested subvolumes).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/result.h"
#include "btrfs/tree_source.h"
#include "src/read/inode_lookup.h"
#include "src/scope/snapshot_family.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

class IncrementalScan {
  struct Made {};  // only the factories below can construct one

 public:
  explicit IncrementalScan(Made) {}
  // The places the full scan of `roots` (scan_tree of each) would read, found from the
  // subvolume list and the nested subvolumes' directories only. nullptr when a root is not
  // a directory or the roots span filesystems: the caller scans in full instead.
  // `out` gets the scan's roots, filesystem and subvolumes, and no file yet.
  static btrfs::Result<std::unique_ptr<IncrementalScan>> of_roots(
      const std::vector<std::string>& roots, const ScanOptions& options, ScanResult& out);
  // The same for scan_subvolumes(fs_path, subvolumes).
  static btrfs::Result<std::unique_ptr<IncrementalScan>> of_subvolumes(
      const std::string& fs_path, const std::vector<SubvolumeRoot>& subvolumes,
      const ScanOptions& options, ScanResult& out);
  // of_subvolumes() with its trees read from `trees` (which must outlive the scan) and the
  // filesystem's subvolumes given (`all`): nothing is opened, fd() is -1. For tests over an
  // in-memory tree; add_outside() needs paths that open and finds no top directory.
  static std::unique_ptr<IncrementalScan> of_tree_source(
      btrfs::TreeSource& trees, const std::vector<SubvolumeRoot>& subvolumes,
      const std::vector<btrfs::Subvolume>& all, const ScanOptions& options, ScanResult& out);

  // Calls `each` with every inode of `subvolume` whose item changed in a transaction after
  // `since` (and up to `until`): only leaves written after `since` are read.
  btrfs::Result<void> changed_inodes(
      uint64_t subvolume, uint64_t since, uint64_t until,
      const std::function<void(uint64_t inode, const btrfs::InodeItem&)>& each);

  // A file as it is now; nullopt when it is gone.
  btrfs::Result<std::optional<InodeState>> read(uint64_t subvolume, uint64_t inode) {
    return inodes(subvolume).read(inode, true);
  }

  // Files `sorted` (ascending inodes) of `subvolume` as they are now, nearby ones read
  // together (SubvolumeInodes::read_each); nullptr: gone.
  btrfs::Result<void> read_each(
      uint64_t subvolume, const std::vector<uint64_t>& sorted,
      const std::function<btrfs::Result<void>(uint64_t inode, const InodeState* state)>& each) {
    return inodes(subvolume).read_each(sorted, each);
  }

  enum class Outcome { Added, OutOfScope, Excluded, Small, NoData };
  // Whether the full scan would have the file read as `state`. OutOfScope: not a regular
  // file, not below a root; Excluded, Small: left out by the scan's admission rule
  // (src/scope/scan_admission.h), which a full scan counts; NoData: no regular extent (nothing
  // to dedupe, no catalog row).
  btrfs::Result<Outcome> check(uint64_t subvolume, const InodeState& state) {
    return place(nullptr, subvolume, 0, state);
  }
  // The same, and adds it to `out` (as the full scan would have it) when it would.
  btrfs::Result<Outcome> add(ScanResult& out, uint64_t subvolume, uint64_t inode,
                             const InodeState& state) {
    return place(&out, subvolume, inode, state);
  }
  // A file of a scanned subvolume that is not below the roots (a --hashfile run of a
  // subfolder of the catalog's roots takes catalogued twins from there): added to `out` as
  // a source only (ScannedFile::outside_roots), under an extra root for its subvolume's
  // top directory as a root reaches it, so that it can be opened. OutOfScope: not a
  // regular file, smaller than --min-size, or the top directory not reachable through a
  // root (a subfolder mounted by itself); NoData: no regular extent.
  btrfs::Result<Outcome> add_outside(ScanResult& out, uint64_t subvolume, uint64_t inode,
                                     const InodeState& state);
  // Directories through which add_outside() may also reach subvolumes no root of the scan
  // is in (a side run's catalogued roots: its twins may lie in other subvolumes). One
  // that cannot be opened now is passed over.
  void add_source_roots(const std::vector<std::string>& roots);
  // Whether the subvolume existed when the scan began (a catalogued twin's may be gone).
  bool has_subvolume(uint64_t subvolume) const;
  // The files of the next window of a full scan read in windows (a run too large to hold
  // whole): reads the subvolume trees of the places sequentially from where the last window
  // stopped and adds the files the full scan would have (as add() does) until `out` holds
  // `max_files` files. False when every tree was read to its end.
  // A read-only snapshot's file that is still the file of the same inode in its origin
  // (or in an earlier snapshot of it) folds into that one (src/scope/snapshot_family.h), so the
  // windows of a backup pool hold its distinct files, not every snapshot's copy.
  // `added`, when given, sees each file the window adds, as read, before it is dropped.
  using FileAdded = std::function<void(uint64_t subvolume, uint64_t inode, const InodeState&)>;
  btrfs::Result<bool> read_window(ScanResult& out, size_t max_files,
                                  const FileAdded& added = nullptr);
  // How far read_window() has read the trees, 0..1: whole subvolumes done plus the share of
  // the current one's inode numbers passed (its highest found once by a bisection of
  // single-item probes). An estimate for progress lines: inode numbers are not spread
  // evenly over files, so it is only as good as that.
  double read_fraction();
  // The regular files a whole read of the places would count against its cap, estimated
  // from inode numbers (files_held_at_once of estimate_regular_files, each subvolume once):
  // nested subvolumes count, as the whole read reaches them.
  uint64_t estimated_files();
  // Starts read_window() again at the first file: a second pass over the same trees.
  void rewind_windows() {
    window_place_ = 0;
    window_next_ = 0;
  }
  // Whether read_window() has read past this file (it was in a window already read). A
  // subvolume no window reads counts as passed.
  bool window_passed(uint64_t subvolume, uint64_t inode) const;
  int fd() const { return fd_.get(); }
  // The trees it searches: the kernel's through fd(), or those of_tree_source was given.
  btrfs::TreeSource& trees() const { return *trees_; }
  // Whether read-only snapshot files fold into their originals (ScanOptions).
  bool folds_readonly_aliases() const { return options_.fold_readonly_aliases; }
  // Inodes directory `dir` of `subvolume` holds now.
  btrfs::Result<std::vector<uint64_t>> children(uint64_t subvolume, uint64_t dir) {
    return inodes(subvolume).children(dir);
  }

  // A file kept in a scan result, as read: for mark_readonly_aliases().
  struct KeptFile {
    uint64_t inode = 0;
    uint32_t file = 0;  // index in the scan result
    const InodeState* state = nullptr;
  };
  // The one rule by which a kept file stands for read-only snapshot copies: for each
  // snapshot of `family` folded into `subvolume` (SnapshotFamily::folded_into), a file of
  // the same inode that maps the same extents marks the kept file readonly_alias (its
  // storage stays referenced anyway), and the snapshot among the file's alias subvolumes.
  // `kept` in ascending inodes; each snapshot is read once for all (read_each). Used for
  // a window's files and for the catalogued twins that join a scan.
  btrfs::Result<void> mark_readonly_aliases(ScanResult& out, const SnapshotFamily& family,
                                            uint64_t subvolume, std::span<const KeptFile> kept);

  // Puts the files in scan order (root, subvolume as listed, inode) and the extents in
  // physical order, and counts the tree searches made. Returns the old index of each file,
  // for the caller to put what it keeps per file in the same order.
  std::vector<uint32_t> finish(ScanResult& out);

 private:
  struct Place {
    uint64_t subvolume = 0, top_inode = 0;
    std::string prefix;  // of top_inode, relative to the root
    uint32_t root = 0;
  };
  // Searches the trees through fd_ (set before the first search).
  void search_through_fd();
  SubvolumeInodes& inodes(uint64_t subvolume);
  // Places for the subvolumes given, each a root of its own (of_subvolumes).
  btrfs::Result<void> add_subvolumes(const std::vector<SubvolumeRoot>& subvolumes,
                                     const std::vector<btrfs::Subvolume>& all, ScanResult& out);
  btrfs::Result<void> add_places(std::vector<Place> queue, bool recursive,
                                 const std::vector<btrfs::Subvolume>& all, ScanResult& out);
  btrfs::Result<Outcome> place(ScanResult* out, uint64_t subvolume, uint64_t inode,
                               const InodeState& state);
  btrfs::Result<uint64_t> read_chunks(ScanResult& out, uint64_t subvolume, size_t max_files,
                                      const FileAdded& added);
  // read_window()'s steps for one chunk of a subvolume's regular files, in inode order.
  using Chunk = std::vector<std::pair<uint64_t, InodeState>>;
  btrfs::Result<void> add_chunk(ScanResult& out, uint64_t subvolume, Chunk& chunk,
                                const FileAdded& added);
  btrfs::Result<void> fold_chunk(ScanResult& out, uint64_t subvolume, const Chunk& chunk,
                                 std::vector<bool>& folded);
  btrfs::Result<void> mark_aliases(ScanResult& out, uint64_t subvolume, const Chunk& chunk);

  // The absolute path of `subvolume`'s top directory: from a root in it (a place or a
  // source root), or below its parent's top directory; nullopt: none reaches it.
  btrfs::Result<std::optional<std::string>> top_directory(uint64_t subvolume, int depth = 0);
  // The top directory of `subvolume` as reached from `root`, whose directory is `top_inode`
  // of it, `prefix` below the root (a nested subvolume's place); nullopt: not reached.
  btrfs::Result<std::optional<std::string>> top_from(const std::string& root,
                                                     uint64_t subvolume, uint64_t top_inode,
                                                     const std::string& prefix);

  btrfs::Fd fd_;
  std::unique_ptr<btrfs::TreeSource> kernel_trees_;  // over fd_, unless given a source
  btrfs::TreeSource* trees_ = nullptr;
  ScanOptions options_;
  // add_outside(): the root (index in the scan result) of each subvolume's top directory;
  // nullopt when no root reaches it.
  std::map<uint64_t, std::optional<uint32_t>> outside_roots_;
  std::vector<Place> places_;
  std::map<uint64_t, SubvolumeInodes> inodes_;
  std::vector<ScanRoot> roots_;
  struct SourceRoot {
    uint64_t subvolume = 0, top_inode = 0;
    std::string path;
  };
  std::vector<SourceRoot> source_roots_;  // add_source_roots()
  std::vector<btrfs::Subvolume> all_;     // the filesystem's subvolumes when the scan began
  uint64_t changed_items_ = 0, changed_calls_ = 0;
  // A directory of a place, as found for the scan result being filled: whether it is
  // below the place's top, its path there, and its node in the result's path table. Each
  // directory's path is worked out and stored once, not for and in every file.
  struct PlacedDirectory {
    bool below = false;
    std::string path;  // relative to the place's top
    std::optional<uint32_t> node;  // none yet in this result's path table
  };
  btrfs::Result<PlacedDirectory*> placed_directory(size_t place, uint64_t dir);
  std::map<std::pair<size_t, uint64_t>, PlacedDirectory> directory_nodes_;  // (place, dir)
  // read_window()'s position: index into places_ of the subvolume, and its next inode.
  size_t window_place_ = 0;
  uint64_t window_next_ = 0;
  std::map<uint64_t, uint64_t> highest_inode_;  // by subvolume, for read_fraction()
  std::optional<SnapshotFamily> family_;        // of the window's subvolumes, once read
  static constexpr uint32_t kNotAdded = UINT32_MAX;
  std::vector<uint32_t> chunk_files_;  // file index in the window of each chunk entry
};

// Appends a file read by a targeted search to `out` as the scans build one: its ScannedFile
// (returned, for the caller's flags), its regular extents and its passed-over counts.
ScannedFile& append_file(ScanResult& out, uint64_t subvolume, uint64_t inode,
                         const InodeState& state, uint32_t root, uint32_t path_node);

// Reads the files of `scan` again with targeted searches (same files, same order; one
// gone since is kept without extents): the confirmation after an incremental run's dedupe.
// trees: the filesystem's (IncrementalScan::trees).
btrfs::Result<ScanResult> reread_files(btrfs::TreeSource& trees, const ScanResult& scan);

// Re-reads the files of `scan` marked in `which` (by index) in `scan` itself: their state
// and extents are replaced, the other files kept as they are. The confirmation after a
// window's dedupe, which changed only its destinations, without a second copy of the
// window. trees: the filesystem's (IncrementalScan::trees).
btrfs::Result<void> reread_in_place(btrfs::TreeSource& trees, ScanResult& scan,
                                    const std::vector<bool>& which);

}  // namespace btrdedupe
