// The remainder rewrite's way to the kernel (src/dedupe/remainder_rewrite.h): the calls it makes,
// behind an interface, so its fallbacks (a refused temp file, ENOSPC, DIFFERS, an extent
// still held) can be tested with a scripted stand-in and no btrfs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "btrfs/backrefs.h"
#include "btrfs/dedupe_range.h"
#include "btrfs/fd.h"
#include "btrfs/result.h"

namespace btrdedupe {

// Called from one thread.
class RewriteKernel {
 public:
  virtual ~RewriteKernel();
  // Commits the filesystem's transaction (syncfs), so the rounds' changes are in its trees.
  virtual void commit(int fs_fd) = 0;
  // Every reference of the extent starting at `bytenr` (LOGICAL_INO with ignore_offset:
  // (inode, where the file's extent item begins, subvolume)). A reply too large to be
  // complete is an E2BIG Error; an extent no longer allocated is ENOENT.
  virtual btrfs::Result<std::vector<btrfs::ExtentRef>> extent_references(int fs_fd,
                                                                         uint64_t bytenr) = 0;
  // An unnamed file (O_TMPFILE) on the filesystem of directory `dir_fd`, given file_fd's
  // nodatacow and compression settings before any write, holding the bytes
  // [offset, offset + length) of file_fd at offset 0, written out (fdatasync) so its extent
  // exists. Errors: those of O_TMPFILE (EOPNOTSUPP, EROFS, ENOSPC, EDQUOT), of the writes
  // and fdatasync (ENOSPC, EDQUOT, EIO); ESTALE when file_fd ends before the range does;
  // EINVAL when the settings could not be given. Nothing is linked, so nothing is left.
  virtual btrfs::Result<btrfs::Fd> unnamed_copy(int dir_fd, int file_fd, uint64_t offset,
                                                uint64_t length) = 0;
  // Disk space the extents mapping [offset, offset + length) of file_fd take, when that
  // range is the whole of them (a rewritten remainder): sector-rounded bytes for plain
  // extents, the extent's disk_num_bytes for compressed ones (FIEMAP, then the extent tree).
  virtual btrfs::Result<uint64_t> disk_bytes(int file_fd, uint64_t offset, uint64_t length,
                                             uint32_t sectorsize) = 0;
  // As btrfs::dedupe_range (btrfs/dedupe_range.h).
  virtual btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) = 0;
};

// The real kernel.
RewriteKernel& kernel_rewrite();

}  // namespace btrdedupe
