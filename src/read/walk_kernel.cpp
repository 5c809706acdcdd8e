#include "src/read/walk_kernel.h"

#include "btrfs/subvolume.h"

namespace btrdedupe {
namespace {

class MachineWalkKernel final : public WalkKernel {
 public:
  btrfs::Result<btrfs::FsKind> filesystem_kind(int fd, std::string* name) const override {
    return btrfs::filesystem_kind(fd, name);
  }
  btrfs::Result<btrfs::FsInfo> walked_fs_info(int fd, btrfs::FsKind kind) const override {
    return btrfs::read_walked_fs_info(fd, kind);
  }
  btrfs::Result<std::vector<btrfs::FiemapExtent>> fiemap(int fd) const override {
    return btrfs::fiemap(fd);
  }
  btrfs::Result<uint64_t> subvolume_id(int fd) const override { return btrfs::subvolume_id(fd); }
  btrfs::Result<bool> subvolume_read_only(int fd) const override {
    return btrfs::subvolume_read_only(fd);
  }
};

}  // namespace

WalkKernel::~WalkKernel() = default;

const WalkKernel& machine_walk_kernel() {
  static const MachineWalkKernel kernel;
  return kernel;
}

}  // namespace btrdedupe
