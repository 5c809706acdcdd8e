// splitmix64's finalizer: spreads keys whose bits are sequential or clustered (inode
// numbers, subvolume ids) over all 64 bits, for digests and hash tables.
#pragma once

#include <cstdint>

namespace btrdedupe {

constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace btrdedupe
