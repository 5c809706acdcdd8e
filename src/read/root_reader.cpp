#include "src/read/root_reader.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "btrfs/fd.h"
#include "btrfs/subvolume.h"
#include "src/read/incremental_scan.h"
#include "src/read/path_walk.h"
#include "src/read/scan_scope.h"

namespace btrdedupe {
namespace {

// The fsid of the filesystem of `path`, as `read` finds it from an fd there.
template <class Read>
btrfs::Result<std::string> fsid_at(const std::string& path, Read&& read) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  btrfs::Result<btrfs::FsInfo> info = read(fd->get());
  if (!info) return info.error();
  return info->fsid_string();
}

// A csum tree with no items.
class NoChecksums final : public btrfs::TreeSource {
  class Empty final : public btrfs::ItemCursor {
    btrfs::Result<std::optional<btrfs::TreeItem>> next() override {
      return std::optional<btrfs::TreeItem>{};
    }
    uint64_t ioctl_calls() const override { return 0; }
  };

 public:
  std::unique_ptr<btrfs::ItemCursor> search(const btrfs::SearchKey&, size_t) override {
    return std::make_unique<Empty>();
  }
  btrfs::Result<std::optional<btrfs::ItemKey>> first_key(const btrfs::SearchKey&) override {
    return std::optional<btrfs::ItemKey>{};
  }
};

class TreeReader final : public RootReader {
 public:
  ReaderKind kind() const override { return ReaderKind::Tree; }
  btrfs::Result<ScanResult> scan(const std::string& root, const ScanOptions& o) const override {
    return scan_tree(root, o);
  }
  btrfs::Result<std::string> fsid(const std::string& path) const override {
    return fsid_at(path, [&](int fd) -> btrfs::Result<btrfs::FsInfo> {
      if (auto ok = btrfs::check_is_btrfs(fd, path); !ok) return ok.error();
      return btrfs::read_fs_info(fd);
    });
  }
  btrfs::Result<std::unordered_map<uint64_t, uint64_t>> generations(
      const std::string& path) const override {
    auto list = btrfs::list_subvolumes(path);
    if (!list) return list.error();
    std::unordered_map<uint64_t, uint64_t> out;
    for (const auto& s : *list) out[s.id] = s.generation;
    return out;
  }
  btrfs::TreeSource* checksums() const override { return nullptr; }
  btrfs::Result<std::unique_ptr<IncrementalScan>> targeted(const ScanScope& scope,
                                                           const ScanOptions& options,
                                                           ScanResult& out) const override {
    if (scope.flat())
      return IncrementalScan::of_subvolumes(scope.paths.front(), *scope.subvolumes, options,
                                            out);
    return IncrementalScan::of_roots(scope.paths, options, out);
  }
};

class PathReader final : public RootReader {
 public:
  explicit PathReader(const WalkKernel& kernel) : kernel_(kernel) {}
  ReaderKind kind() const override { return ReaderKind::Paths; }
  btrfs::Result<ScanResult> scan(const std::string& root, const ScanOptions& o) const override {
    return walk_root(root, o, kernel_);
  }
  btrfs::Result<std::string> fsid(const std::string& path) const override {
    return fsid_at(path, [&](int fd) -> btrfs::Result<btrfs::FsInfo> {
      auto kind = kernel_.filesystem_kind(fd, nullptr);
      if (!kind) return btrfs::errno_error("statfs " + path);
      return kernel_.walked_fs_info(fd, *kind);
    });
  }
  btrfs::Result<std::unordered_map<uint64_t, uint64_t>> generations(
      const std::string&) const override {
    return std::unordered_map<uint64_t, uint64_t>{};
  }
  btrfs::TreeSource* checksums() const override { return &none_; }
  btrfs::Result<std::unique_ptr<IncrementalScan>> targeted(const ScanScope&, const ScanOptions&,
                                                           ScanResult&) const override {
    return std::unique_ptr<IncrementalScan>{};
  }

 private:
  const WalkKernel& kernel_;
  mutable NoChecksums none_;
};

bool has_sys_admin() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return ::geteuid() == 0;
  return data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

}  // namespace

const char* reader_name(ReaderKind kind) { return kind == ReaderKind::Tree ? "tree" : "paths"; }

const RootReader& reader_of(ReaderKind kind) {
  static const TreeReader tree;
  static const PathReader paths(machine_walk_kernel());
  if (kind == ReaderKind::Tree) return tree;
  return paths;
}

std::unique_ptr<RootReader> path_reader(const WalkKernel& kernel) {
  return std::make_unique<PathReader>(kernel);
}

ReaderGround reader_ground(int fd) {
  ReaderGround g;
  auto kind = btrfs::filesystem_kind(fd, &g.fs_name);
  g.fs = kind ? *kind : btrfs::FsKind::Other;
  if (!kind) g.fs_name = "an unknown filesystem";
  g.may_search_trees = has_sys_admin();
  return g;
}

btrfs::Result<ReaderChoice> choose_reader(const ReaderGround& ground, const std::string& path,
                                          std::optional<ReaderKind> forced) {
  if (ground.fs == btrfs::FsKind::Other)
    return btrfs::Error{0, path + " is on " + ground.fs_name +
                               ": btrdedupe dedupes on btrfs and XFS"};
  const bool xfs = ground.fs == btrfs::FsKind::Xfs;
  if (xfs && forced == ReaderKind::Tree)
    return btrfs::Error{0, path + " is on xfs, which has no trees to search: use --reader=paths"};
  ReaderChoice c;
  c.kind = forced ? *forced
                  : (xfs || !ground.may_search_trees ? ReaderKind::Paths : ReaderKind::Tree);
  // A reader asked for needs no note; one the run fell back to does.
  if (c.kind == ReaderKind::Tree || (forced && !xfs && ground.may_search_trees)) return c;
  const char* why = xfs ? "xfs has no trees to search" : "tree search needs root";
  c.note = std::string("reading by paths (") + why +
           "): file data is read for fingerprints (no checksum tree) and each run walks every "
           "file (no generations)";
  if (!ground.may_search_trees) c.note += "; only files you may write are deduped into";
  return c;
}

}  // namespace btrdedupe
