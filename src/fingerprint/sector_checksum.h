// The filesystem's own per-sector checksum, computed from data bytes.
//
// Used where the csum tree has no sums (compressed extents are summed over their
// compressed bytes, nodatasum files have none): computing the same algorithm over the
// logical bytes makes a compressed copy and an uncompressed copy fingerprint alike.
#pragma once

#include <cstdint>
#include <span>

#include "btrfs/fs_info.h"

namespace btrdedupe {

class SectorChecksum {
 public:
  explicit SectorChecksum(btrfs::CsumType type);

  // Bytes of one checksum, as stored in the csum tree.
  uint16_t size() const { return size_; }
  // Writes size() bytes for `sector` (one whole sector; the caller zero-pads a short
  // final sector, as the page cache does past EOF), in the csum tree's byte order.
  void compute(std::span<const uint8_t> sector, uint8_t* out) const;

 private:
  btrfs::CsumType type_;
  uint16_t size_;
};

// True for the crc32c sector sum that proves nothing about the sector's bytes: a sector
// that starts with a structure ending in its own raw crc32c (seed ~0, no final inversion,
// little-endian, as ext4 stores its superblock checksum), followed by anything whose CRC
// keeps the zero state (zero bytes), always sums to 0xffffffff: the CRC of data followed
// by its CRC is a constant. So every ext4 backup superblock in a disk image, whatever its
// group number and checksum, has this sum.
inline bool is_crc32c_residue(std::span<const uint8_t> sum) {
  return sum.size() == 4 && sum[0] == 0xff && sum[1] == 0xff && sum[2] == 0xff && sum[3] == 0xff;
}

// CRC-32C (Castagnoli) with the usual ~0 init and final inversion; hardware instruction
// when the CPU has SSE4.2.
uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc = 0);

}  // namespace btrdedupe
