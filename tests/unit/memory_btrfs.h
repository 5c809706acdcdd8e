// An in-memory btrfs for whole runs of run_job without root (src/run/run_world.h): one
// subvolume (5) whose tree lives in a MemoryTreeSource, with files that are also real files
// in a temporary directory (the fingerprint's data reads and the dedupe engine open them by
// path), each sector's csum a content id in its csum tree, and a kernel whose dedupe calls
// a script answers. A range answered Same is shared as btrfs shares it: the destination's
// extent items are split at the range's ends and point at the source's extent, in a new
// generation, so the confirmation, the freed-space check and a re-run's incremental read
// all see what the calls did.
// It serves the walk of the paths too (src/read/path_walk.h): reader(ReaderKind::Paths)
// walks the temporary directory, FIEMAP answered from the same extents (as btrfs answers
// it: SHARED where another reference exists, ENCODED where compressed), and `standing` may
// say the run has no CAP_SYS_ADMIN, or that the filesystem is XFS, so the job takes it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/dedupe/dedupe_kernel.h"
#include "src/read/walk_kernel.h"
#include "src/run/run_world.h"
#include "tests/support/memory_tree_source.h"

namespace btrdedupe::test {

class MemoryBtrfs final : public RunWorld,
                          public RootReader,
                          public RunKernel,
                          public DedupeKernel {
 public:
  static constexpr uint64_t kTop = 5;  // the subvolume's id
  // Answers of one dedupe call: (call index, length, destinations) -> an outcome each.
  using Script = std::function<std::vector<btrfs::DedupeOutcome>(
      size_t call, uint64_t length, size_t destinations)>;

  MemoryBtrfs();  // the directory in $TMPDIR (else /tmp)
  ~MemoryBtrfs() override;
  MemoryBtrfs(const MemoryBtrfs&) = delete;
  MemoryBtrfs& operator=(const MemoryBtrfs&) = delete;

  // The top directory's path: the run's root.
  const std::string& root() const { return root_; }
  // How a file's data is stored: summed in the csum tree (crc32c of its bytes, as btrfs
  // sums them), without sums (a nodatasum file), or in a compressed extent (zstd, half its
  // size on disk; the fingerprint reads its data either way).
  enum class Stored { Summed, NoDataSum, Compressed };
  // A file of the top directory whose sector i holds content[i] (equal ids: equal bytes),
  // written in a new generation in one extent at a fresh address; its real file's inode.
  uint64_t write_file(const std::string& name, const std::vector<uint32_t>& content,
                      Stored stored = Stored::Summed);
  // The file's content written again (new extent, new generation), in place.
  void rewrite_file(const std::string& name, const std::vector<uint32_t>& content);
  void remove_file(const std::string& name);
  // A new name for the file (its inode, content and extents kept), as rename(2) gives it.
  void rename_file(const std::string& from, const std::string& to);

  // Disk addresses of the extents `name` references now.
  std::set<uint64_t> extents_of(const std::string& name) const;
  // The bytes of every extent some file references, each extent once: btrfs's Data used.
  uint64_t referenced_bytes() const;
  size_t dedupe_calls() const;

  Script script;                           // default: every destination Same
  std::function<void(size_t call)> on_call;  // e.g. a stop that comes mid-round
  // What ground() says of the filesystem; by default a btrfs that root may search.
  ReaderGround standing;

  // RunWorld: this filesystem reads and dedupes itself, by its trees or by a walk.
  btrfs::Result<ReaderGround> ground(const std::string&) override { return standing; }
  const RootReader& reader(ReaderKind kind) override;
  RunKernel& kernel(ReaderKind kind) override;
  // Its one subvolume, mounted at root() alone.
  SubvolumeGround& subvolume_ground() override { return subvolumes_; }
  // Its id for a path below root(); refused elsewhere, as a file off btrfs is.
  std::string filesystem_id(const std::string& path, bool want_file, std::string* why) override;

  // RootReader: the tree readers' own code over the in-memory tree.
  ReaderKind kind() const override { return ReaderKind::Tree; }
  btrfs::Result<ScanResult> scan(const std::string& root, const ScanOptions& o) const override;
  btrfs::Result<std::string> fsid(const std::string&) const override;
  btrfs::Result<std::unordered_map<uint64_t, uint64_t>> generations(
      const std::string&) const override;
  btrfs::TreeSource* checksums() const override { return &tree_; }
  btrfs::Result<std::unique_ptr<IncrementalScan>> targeted(const ScanScope& scope,
                                                           const ScanOptions& options,
                                                           ScanResult& out) const override;

  // RunKernel.
  DedupeKernel& dedupe() override { return *this; }
  RewriteKernel& rewrite() override;
  btrfs::Result<std::vector<bool>> still_allocated(const ScanResult& now,
                                                   const std::vector<PhysicalExtent>& extents,
                                                   uint64_t scanned_at) override;
  std::vector<btrfs::Subvolume> subvolumes(const std::string&) override { return {top()}; }
  unsigned io_threads(const std::string&) override { return 2; }

  // DedupeKernel.
  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) override;

 private:
  // The walk's kernel questions and its run's kernel (memory_btrfs_walk.cpp): FIEMAP from
  // the files' pieces, one writable subvolume; dedupes go to the filesystem, and what a
  // dedupe freed is what kernel_walked() counts from the confirmation's walk.
  class Walked final : public WalkKernel, public RunKernel {
   public:
    explicit Walked(MemoryBtrfs& fs) : fs_(fs) {}
    btrfs::Result<btrfs::FsKind> filesystem_kind(int fd, std::string* name) const override;
    btrfs::Result<btrfs::FsInfo> walked_fs_info(int fd, btrfs::FsKind kind) const override;
    btrfs::Result<std::vector<btrfs::FiemapExtent>> fiemap(int fd) const override;
    btrfs::Result<uint64_t> subvolume_id(int) const override { return kTop; }
    btrfs::Result<bool> subvolume_read_only(int) const override { return false; }

    DedupeKernel& dedupe() override { return fs_; }
    RewriteKernel& rewrite() override;
    btrfs::Result<std::vector<bool>> still_allocated(const ScanResult& now,
                                                     const std::vector<PhysicalExtent>& extents,
                                                     uint64_t scanned_at) override;
    std::vector<btrfs::Subvolume> subvolumes(const std::string&) override { return {}; }
    unsigned io_threads(const std::string&) override { return 2; }

   private:
    MemoryBtrfs& fs_;
  };
  struct Piece {  // one EXTENT_DATA item
    uint64_t file_offset, length, bytenr, extent_bytes, extent_offset;
    uint64_t disk_bytes;  // extent_bytes, or less when compressed
  };
  struct File {
    std::string name;
    uint64_t index = 0;  // of its DIR_INDEX entry
    Stored stored = Stored::Summed;
    uint64_t size = 0;
    btrfs::Timespec mtime{};
    std::vector<Piece> pieces;
  };
  // The subvolume ground of the top directory, mounted at root_ (and nowhere else).
  class Subvolumes final : public SubvolumeGround {
   public:
    explicit Subvolumes(const MemoryBtrfs& fs) : fs_(fs) {}
    btrfs::Result<std::vector<btrfs::Subvolume>> subvolumes(const std::string& path) override;
    btrfs::Result<btrfs::FsInfo> fs_info(const std::string& path) override;
    std::string mount_table() override;
    std::string real_path(const std::string& path) override { return path; }
    btrfs::Result<OpenedSubvolumeRoot> subvolume_root(const std::string& path) override;
    btrfs::Result<ScanResult> scan(const std::string& fs_path,
                                   const std::vector<SubvolumeRoot>& subvolumes,
                                   const ScanOptions& options) override;

    // Errors unless `path` is on the filesystem: root_ or a path below it.
    btrfs::Result<void> on_filesystem(const std::string& path) const;

   private:
    const MemoryBtrfs& fs_;
  };

  btrfs::FsInfo fs_info() const;
  btrfs::Subvolume top() const;
  File& file_named(const std::string& name);
  // Writes the real file and the tree items of `f` (inode `ino`) in a new generation.
  void put_file(uint64_t ino, File& f, const std::vector<uint32_t>& content);
  void put_items(uint64_t ino, const File& f);
  void remove_items(uint64_t ino);
  // The file's name in the top directory: INODE_REF and DIR_INDEX, added or removed.
  void name_file(uint64_t ino, File& f);
  void unname_file(uint64_t ino, const File& f);
  // The top directory's inode item in the current generation: its entries changed.
  void touch_top_directory();
  uint64_t inode_named(const std::string& name) const;
  // The destination's range points at the source's extent (btrfs's FIDEDUPERANGE).
  void share(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
             uint64_t bytes);

  std::string root_;
  mutable MemoryTreeSource tree_{kTop};
  std::map<uint64_t, File> files_;  // by inode
  uint64_t generation_ = 10;
  uint64_t next_bytenr_ = 1ULL << 30;
  uint64_t dir_index_ = 2;
  mutable std::mutex mu_;  // dedupe_range comes from the run's dedupe workers
  size_t calls_ = 0;
  std::unique_ptr<Walked> walked_;
  std::unique_ptr<RootReader> walk_reader_;
  Subvolumes subvolumes_{*this};
};

}  // namespace btrdedupe::test
