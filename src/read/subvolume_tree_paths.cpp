// Placing a read subvolume tree's directories and files below the scan's top; why this is
// apart from the read: src/read/subvolume_tree_paths.h.
#include "src/read/subvolume_tree_paths.h"

namespace btrdedupe {

bool path_below(const SubvolumeTree& tree, uint64_t ino, uint64_t top, std::string* path) {
  std::vector<std::string_view> parts;
  for (int depth = 0; ino != top; ++depth) {
    const size_t i = tree.find_dir(ino);
    if (i == std::string::npos || tree.dirs[i].parent == 0 || tree.dirs[i].parent == ino ||
        depth > 4096)
      return false;
    parts.push_back(tree.dir_name(i));
    ino = tree.dirs[i].parent;
  }
  path->clear();
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
    if (!path->empty()) *path += '/';
    *path += *p;
  }
  return true;
}

bool file_path_below(const SubvolumeTree& tree, size_t i, uint64_t top, std::string* path) {
  if (tree.files[i].parent == 0 || !path_below(tree, tree.files[i].parent, top, path))
    return false;
  if (!path->empty()) *path += '/';
  *path += tree.file_name(i);
  return true;
}

bool Membership::below(uint64_t ino) {
  std::vector<size_t> chain;
  uint8_t result = kOutside;
  for (size_t i = tree_.find_dir(ino); i != std::string::npos;) {
    if (tree_.dirs[i].ino == top_) {
      result = kInside;
      break;
    }
    if (state_[i] != kUnknown) {
      result = state_[i];
      break;
    }
    chain.push_back(i);
    const DirEntry& e = tree_.dirs[i];
    if (e.parent == 0 || e.parent == e.ino || chain.size() > 4096) break;
    i = tree_.find_dir(e.parent);
  }
  for (size_t i : chain) state_[i] = result;
  return result == kInside;
}

uint32_t PathBuilder::dir_node(uint64_t ino) {
  std::vector<size_t> chain;
  uint32_t base = top_node_;
  for (size_t i = tree_.find_dir(ino); i != std::string::npos && tree_.dirs[i].ino != top_;
       i = tree_.find_dir(tree_.dirs[i].parent)) {
    if (node_[i] != kUnset) {
      base = node_[i];
      break;
    }
    chain.push_back(i);
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    base = node_[*it] = table_.add(base, tree_.dir_name(*it));
  return base;
}

}  // namespace btrdedupe
