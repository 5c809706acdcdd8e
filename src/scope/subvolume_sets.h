// Which read-only subvolumes each kept file stands for, compactly.
//
// The scan folds a read-only snapshot's file into an identical file already scanned
// (ScannedFile::readonly_alias): the snapshot's file is dropped, but its subvolume still
// references those extents, which per-subvolume figures (exclusive bytes) must know.
// Files aliased by the same snapshots share one interned set, so the cost is 4 bytes per
// file up to the last aliased one plus one entry per distinct set: snapshots taken in a row
// give a handful of sets ({s1}, {s1,s2}, {s1,s2,s3}...), however many files they hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace btrdedupe {

class FileSubvolumeSets {
 public:
  // Index of `file`'s set; 0 is the empty set.
  uint32_t set_of(uint32_t file) const { return file < of_file_.size() ? of_file_[file] : 0; }
  // The subvolume ids of a set, sorted.
  const std::vector<uint64_t>& subvolumes(uint32_t set) const;
  const std::vector<uint64_t>& subvolumes_of(uint32_t file) const {
    return subvolumes(set_of(file));
  }
  // Adds `subvolume` to `file`'s set.
  void add(uint32_t file, uint64_t subvolume);
  // Adds every subvolume of `other`'s set `set` to `file`'s set (merging scans).
  void add_all(uint32_t file, const FileSubvolumeSets& other, uint32_t set);
  bool empty() const { return of_file_.empty(); }
  size_t distinct_sets() const { return sets_.size(); }

 private:
  uint32_t with(uint32_t set, uint64_t subvolume);

  std::vector<uint32_t> of_file_;               // grows only up to the last aliased file
  std::vector<std::vector<uint64_t>> sets_{{}};  // [0] = {}
  std::map<std::vector<uint64_t>, uint32_t> index_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> with_;  // (set, subvolume) -> set
};

}  // namespace btrdedupe
