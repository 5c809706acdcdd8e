#include "src/read/inode_bitset.h"

namespace btrdedupe {

void InodeBitset::insert(uint64_t subvolume, uint64_t inode) {
  auto& bits = by_subvolume_[subvolume];
  if (inode >= bits.size()) bits.resize(inode + 1 + inode / 8, false);  // grow by an eighth
  if (bits[inode]) return;
  bits[inode] = true;
  ++count_;
}

bool InodeBitset::contains(uint64_t subvolume, uint64_t inode) const {
  const auto it = by_subvolume_.find(subvolume);
  return it != by_subvolume_.end() && inode < it->second.size() && it->second[inode];
}

}  // namespace btrdedupe
