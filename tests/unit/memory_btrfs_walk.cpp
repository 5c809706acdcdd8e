// MemoryBtrfs as the walk of the paths finds it (tests/unit/memory_btrfs.h).
#include <linux/fiemap.h>
#include <sys/stat.h>

#include <map>

#include "tests/unit/memory_btrfs.h"

namespace btrdedupe::test {

const RootReader& MemoryBtrfs::reader(ReaderKind kind) {
  if (kind == ReaderKind::Tree) return *this;
  return *walk_reader_;
}

RunKernel& MemoryBtrfs::kernel(ReaderKind kind) {
  if (kind == ReaderKind::Tree) return *this;
  return *walked_;
}

btrfs::Result<btrfs::FsKind> MemoryBtrfs::Walked::filesystem_kind(int, std::string* name) const {
  if (fs_.standing.fs == btrfs::FsKind::Other && name) *name = fs_.standing.fs_name;
  return fs_.standing.fs;
}

// As btrfs::read_walked_fs_info: btrfs's own figures without a generation; XFS's a uuid
// and the checksum the walk sums data with.
btrfs::Result<btrfs::FsInfo> MemoryBtrfs::Walked::walked_fs_info(int, btrfs::FsKind kind) const {
  btrfs::FsInfo info = fs_.fs_info();
  info.generation = 0;
  if (kind == btrfs::FsKind::Xfs) {
    info.nodesize = 0;
    info.csum_type = btrfs::CsumType::Xxhash64;
    info.csum_size = 8;
  }
  return info;
}

// As btrfs's FIEMAP: an uncompressed piece at its extent's start plus its offset, a
// compressed one at its extent's start (ENCODED); SHARED where the extent has another
// reference.
btrfs::Result<std::vector<btrfs::FiemapExtent>> MemoryBtrfs::Walked::fiemap(int fd) const {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return btrfs::errno_error("fstat");
  std::lock_guard lock(fs_.mu_);
  const auto file = fs_.files_.find(st.st_ino);
  if (file == fs_.files_.end()) return btrfs::Error{ENOENT, "no file of inode " + std::to_string(st.st_ino)};
  std::map<uint64_t, size_t> references;
  for (const auto& [ino, f] : fs_.files_)
    for (const Piece& p : f.pieces) ++references[p.bytenr];
  std::vector<btrfs::FiemapExtent> out;
  for (const Piece& p : file->second.pieces) {
    const bool compressed = p.disk_bytes < p.extent_bytes;
    uint32_t flags = compressed ? FIEMAP_EXTENT_ENCODED : 0;
    if (references[p.bytenr] > 1) flags |= FIEMAP_EXTENT_SHARED;
    out.push_back({p.file_offset, compressed ? p.bytenr : p.bytenr + p.extent_offset, p.length,
                   flags});
  }
  if (!out.empty()) out.back().flags |= FIEMAP_EXTENT_LAST;
  return out;
}

RewriteKernel& MemoryBtrfs::Walked::rewrite() { return kernel_rewrite(); }  // never planned

btrfs::Result<std::vector<bool>> MemoryBtrfs::Walked::still_allocated(
    const ScanResult& now, const std::vector<PhysicalExtent>& extents, uint64_t scanned_at) {
  return kernel_walked().still_allocated(now, extents, scanned_at);
}

}  // namespace btrdedupe::test
