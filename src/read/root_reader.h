// How a run reads its roots, chosen once before anything is read (choose_reader): the
// btrfs trees by tree search (src/read/tree_scan.h: no data read for checksums, re-runs
// read what changed by generation; needs CAP_SYS_ADMIN), or a walk of the paths with
// FIEMAP (src/read/path_walk.h: any user, btrfs or XFS; data read, each run walks the whole
// tree and the catalog tells changed files by size and mtime). Everything after the read
// is the same pipeline.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "btrfs/fs_info.h"
#include "btrfs/result.h"
#include "btrfs/tree_source.h"
#include "src/read/reader_kind.h"
#include "src/read/tree_scan.h"
#include "src/read/walk_kernel.h"

namespace btrdedupe {

class IncrementalScan;
struct ScanScope;

// Contract: stateless, shared by the whole run.
class RootReader {
 public:
  virtual ~RootReader() = default;
  virtual ReaderKind kind() const = 0;
  // One root: a directory tree or one regular file.
  virtual btrfs::Result<ScanResult> scan(const std::string& root,
                                         const ScanOptions& options) const = 0;
  // The identity of the filesystem of `path`, as FsInfo::fsid_string spells it.
  virtual btrfs::Result<std::string> fsid(const std::string& path) const = 0;
  // Each subvolume's generation now (after syncfs): what lets a re-run read only what
  // changed. Empty: this reader cannot tell, and every run reads its roots whole.
  virtual btrfs::Result<std::unordered_map<uint64_t, uint64_t>> generations(
      const std::string& path) const = 0;
  // Where the fingerprint takes checksums: nullptr for the kernel's csum tree; a walk's
  // has none (every sector is read).
  virtual btrfs::TreeSource* checksums() const = 0;
  // The targeted reader of `scope`'s places (src/read/incremental_scan.h), through which
  // re-runs read what changed, windows read a large tree and the job estimates its size.
  // nullptr where it cannot read them so (a walk; roots on several filesystems): the run
  // reads them whole. `out` gets the scan's roots, filesystem and subvolumes.
  virtual btrfs::Result<std::unique_ptr<IncrementalScan>> targeted(
      const ScanScope& scope, const ScanOptions& options, ScanResult& out) const = 0;
};

// The machine's readers: tree search, or the walk over machine_walk_kernel().
const RootReader& reader_of(ReaderKind kind);
// A walk of the paths whose kernel questions `kernel` answers; it must outlive the reader.
std::unique_ptr<RootReader> path_reader(const WalkKernel& kernel);

// What the run may do on the filesystem of its first path.
struct ReaderGround {
  btrfs::FsKind fs = btrfs::FsKind::Btrfs;
  std::string fs_name;           // for an Other filesystem's message
  bool may_search_trees = true;  // CAP_SYS_ADMIN
};
ReaderGround reader_ground(int fd);

struct ReaderChoice {
  ReaderKind kind = ReaderKind::Tree;
  std::string note;  // one line: why paths are walked and what that cannot do; "" for trees
};
// Trees where tree search is allowed on btrfs, paths otherwise (not root, or XFS);
// `forced` (--reader) wins where it can run at all. Errors: a filesystem without
// FIDEDUPERANGE that btrdedupe reads, or trees forced on XFS.
btrfs::Result<ReaderChoice> choose_reader(const ReaderGround& ground, const std::string& path,
                                          std::optional<ReaderKind> forced);

}  // namespace btrdedupe
