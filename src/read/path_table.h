// The paths of scanned files, stored as a tree of names.
//
// A tree of 150k files held as one std::string per file costs ~100 bytes a path (the
// string plus its heap block), and the same directory names are repeated in every path
// below them. Here each name is stored once, as a node pointing at its parent's node:
// a file costs its own name plus 12 bytes, and a path is built only when one is needed
// (a file is opened, an error or a group is printed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace btrdedupe {

// "a/b" from "a" and "b"; either may be empty (the root).
inline std::string join_relative(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

// The last component of a '/'-separated path.
inline std::string basename_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

class PathTable {
 public:
  // The node of the scan root itself: its path is "".
  static constexpr uint32_t kRoot = UINT32_MAX;

  // Adds `name` below `parent`, returns its node. A name may hold '/' (a prefix of several
  // components added at once, such as a nested subvolume's place below the root).
  uint32_t add(uint32_t parent, std::string_view name);
  // The names from the root down to `node`, joined by '/'.
  std::string path(uint32_t node) const;
  uint32_t parent(uint32_t node) const { return parent_[node]; }
  std::string_view name(uint32_t node) const;
  size_t size() const { return parent_.size(); }
  // Appends every node of `other` (their parents renumbered); returns what was added to
  // other's node numbers to get this table's.
  uint32_t append(const PathTable& other);
  void shrink_to_fit();

 private:
  std::vector<uint32_t> parent_;  // kRoot: directly below the root
  std::vector<uint64_t> end_;     // end of each name in names_; it starts where the previous ends
  std::string names_;
};

}  // namespace btrdedupe
