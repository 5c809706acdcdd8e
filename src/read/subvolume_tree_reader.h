// One subvolume tree read into memory, before the scan knows which of its files it keeps.
// Internal to the tree scan. Apart from the scan's walk because reading a tree (tree search
// items, memory per inode) changes for other reasons than choosing and placing files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "btrfs/items.h"
#include "btrfs/result.h"
#include "btrfs/tree_source.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// A directory of a subvolume: what membership, paths and the placement of nested
// subvolumes need. Only directories get one: the scan's largest structure while a
// subvolume is read was a 64-byte entry for every inode.
struct DirEntry {
  uint64_t ino = 0;
  uint64_t parent = 0;
  uint32_t name_end = 0;  // in SubvolumeTree::dir_names; the name starts where the previous ends
};

// A regular file as read, until membership (which needs the whole subvolume: a moved file's
// directory may come after it) says whether it becomes a ScannedFile. The INODE_ITEM
// fields a ScannedFile keeps and the parent, nothing more.
struct PendingFile {
  uint64_t ino = 0;
  uint64_t parent = 0;  // of the first name
  uint64_t size = 0, flags = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  btrfs::Timespec mtime() const { return {mtime_sec, mtime_nsec}; }
};

// An inline, hole or prealloc extent: only counted, once its file is known to be kept.
struct PassedOverPiece {
  uint32_t file = 0;  // index into SubvolumeTree::files
  btrfs::FileExtentType type = btrfs::FileExtentType::Regular;  // Regular: a hole
  uint64_t length = 0;
  uint64_t disk_bytenr = 0;  // a prealloc range's extent
};

// One subvolume's directories and regular files straight from its tree, each in key
// order (tree search returns items sorted). Its regular extents go to ScanResult::extents
// as they are read, FileExtent::file holding the file's index here until the kept files
// are known (scan_queue): no second copy of the extents is held. Deques: they grow
// without the copy (and twice the memory for a moment) of a doubling vector.
struct SubvolumeTree {
  std::deque<DirEntry> dirs;
  std::string dir_names;
  std::deque<PendingFile> files;
  // Files' names, only when paths or exclusion need them.
  std::string file_names;
  std::deque<uint32_t> file_name_ends;
  std::vector<PassedOverPiece> passed;
  static_assert(sizeof(DirEntry) == 24 && sizeof(PendingFile) == 48);

  std::string_view dir_name(size_t i) const {
    const uint64_t begin = i == 0 ? 0 : dirs[i - 1].name_end;
    return std::string_view(dir_names).substr(begin, dirs[i].name_end - begin);
  }
  std::string_view file_name(size_t i) const {
    if (file_name_ends.empty()) return {};
    const uint64_t begin = i == 0 ? 0 : file_name_ends[i - 1];
    return std::string_view(file_names).substr(begin, file_name_ends[i] - begin);
  }
  // Index of directory `ino`'s entry, or npos.
  size_t find_dir(uint64_t ino) const {
    auto it = std::lower_bound(dirs.begin(), dirs.end(), ino,
                               [](const DirEntry& e, uint64_t i) { return e.ino < i; });
    return it == dirs.end() || it->ino != ino ? std::string::npos
                                              : static_cast<size_t>(it - dirs.begin());
  }
};

void count_passed_over(const PassedOverPiece& piece, PassedOver& p);

// Called once all of a regular file's items are read, with its regular extents; true drops
// the file there and then (a read-only snapshot's copy of a file already scanned), so its
// pending entry and extents never pile up beside the rest of the scan.
using DropFile =
    std::function<bool(const PendingFile&, const FileExtent* first, const FileExtent* end)>;

// Reads subvolume `subvol`'s tree from `trees`: its inodes' items (INODE_ITEM, first name,
// EXTENT_DATA); regular extents go to out.extents, the rest is counted in tree.passed.
// names: keep each inode's name (for paths); without, only the parent links membership needs.
// warmup_threads: threads reading the tree ahead of this walk (src/read/tree_warmup.h).
// max_files: with the files already in `out`, more than this many is EFBIG (0: no limit).
btrfs::Result<SubvolumeTree> read_subvolume_tree(btrfs::TreeSource& trees, uint64_t subvol,
                                                 ScanResult& out,
                                                 bool names, unsigned warmup_threads,
                                                 uint64_t max_files, const DropFile& drop = {});

}  // namespace btrdedupe
