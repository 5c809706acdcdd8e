// Where a read subvolume tree's directories and files lie below the scan's top directory:
// membership, relative paths and path-table nodes. Internal to the tree scan. Apart from the
// read (src/read/subvolume_tree_reader.h) because placing needs the whole tree (a moved file's
// directory may come after it), and one bounded walk up the parent links serves membership,
// --exclude and names alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/read/path_table.h"
#include "src/read/subvolume_tree_reader.h"

namespace btrdedupe {

// Path of directory `ino` relative to `top` (a directory inode), or false when not below it.
bool path_below(const SubvolumeTree& tree, uint64_t ino, uint64_t top, std::string* path);

// Path of file `i` (an index into tree.files) relative to `top`, or false when not below it.
bool file_path_below(const SubvolumeTree& tree, size_t i, uint64_t top, std::string* path);

// Which directories lie below the scan's top directory, remembered along each walk up so a
// directory is walked once, however many files it holds.
class Membership {
 public:
  Membership(const SubvolumeTree& tree, uint64_t top)
      : tree_(tree), top_(top), state_(tree.dirs.size(), kUnknown) {}

  // Whether directory `ino` is the top or below it.
  bool below(uint64_t ino);

 private:
  static constexpr uint8_t kUnknown = 0, kInside = 1, kOutside = 2;
  const SubvolumeTree& tree_;
  uint64_t top_;
  std::vector<uint8_t> state_;
};

// Adds the names of kept files to a PathTable, each directory once.
class PathBuilder {
 public:
  PathBuilder(const SubvolumeTree& tree, uint64_t top, uint32_t top_node, PathTable& table)
      : tree_(tree), top_(top), top_node_(top_node), table_(table),
        node_(tree.dirs.size(), kUnset) {}

  // The node of tree file `i` (named by tree.file_name(i)) in directory `parent`, which
  // Membership found below the top.
  uint32_t file_node(size_t i, uint64_t parent) {
    return table_.add(dir_node(parent), tree_.file_name(i));
  }

 private:
  uint32_t dir_node(uint64_t ino);

  static constexpr uint32_t kUnset = PathTable::kRoot - 1;
  const SubvolumeTree& tree_;
  uint64_t top_;
  uint32_t top_node_;
  PathTable& table_;
  std::vector<uint32_t> node_;
};

}  // namespace btrdedupe
