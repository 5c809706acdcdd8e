// A set of files, (subvolume, inode), kept as one bit per inode number: a subvolume's
// inode numbers are dense, so marking every file of a large tree costs an eighth of a byte
// per inode, where a hash set of keys costs tens of bytes per file.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace btrdedupe {

class InodeBitset {
 public:
  void insert(uint64_t subvolume, uint64_t inode);
  bool contains(uint64_t subvolume, uint64_t inode) const;
  uint64_t size() const { return count_; }  // files inserted (each once)

 private:
  std::unordered_map<uint64_t, std::vector<bool>> by_subvolume_;
  uint64_t count_ = 0;
};

}  // namespace btrdedupe
