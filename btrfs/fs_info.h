// Filesystem-wide facts: identity, sector and node size, checksum algorithm.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "btrfs/result.h"

namespace btrfs {

// Values of btrfs_csum_type (<linux/btrfs_tree.h>).
enum class CsumType : uint16_t { Crc32c = 0, Xxhash64 = 1, Sha256 = 2, Blake2b = 3 };

struct FsInfo {
  std::array<uint8_t, 16> fsid{};
  uint64_t num_devices = 0;
  uint32_t nodesize = 0;
  uint32_t sectorsize = 0;
  CsumType csum_type = CsumType::Crc32c;
  uint16_t csum_size = 0;      // bytes per sector checksum
  uint64_t generation = 0;     // filesystem generation when read (0 if the kernel lacks it)

  std::string fsid_string() const;  // canonical 8-4-4-4-12 form
};

// Name of a checksum algorithm as mkfs.btrfs --csum spells it: "crc32c", "xxhash", ...
const char* csum_type_name(CsumType type);

// BTRFS_IOC_FS_INFO on any fd of the filesystem. Fails with ENOTTY-like errors on other
// filesystems; call check_is_btrfs first for a message that names the filesystem type.
Result<FsInfo> read_fs_info(int fd);

// statfs(2) check: ok when fd is on btrfs; otherwise an Error (code 0) whose context
// names `path` and the filesystem type found there, e.g. "/tmp is on tmpfs, not btrfs".
Result<void> check_is_btrfs(int fd, const std::string& path);

// Filesystems FIDEDUPERANGE serves that btrdedupe reads: btrfs by its trees or its paths,
// XFS (reflink) by its paths.
enum class FsKind { Btrfs, Xfs, Other };
// statfs(2) of fd: which kind, and for Other an Error-ready name ("tmpfs", "type 0x...").
Result<FsKind> filesystem_kind(int fd, std::string* name = nullptr);

// What a path walk knows of a filesystem that is not read by its trees: the identity
// (FS_IOC_GETFSUUID, the superblock's uuid; BTRFS_IOC_FS_INFO on btrfs, which any user
// may ask), the block size as the sector, and no generation (0). On XFS the sums are
// xxhash64: no checksum of its own to agree with.
Result<FsInfo> read_walked_fs_info(int fd, FsKind kind);

}  // namespace btrfs
