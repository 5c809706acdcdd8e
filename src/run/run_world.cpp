#include "src/run/run_world.h"

#include <fcntl.h>

#include "btrfs/fd.h"
#include "src/scope/fdupes_input.h"

namespace btrdedupe {
namespace {

class MachineWorld final : public RunWorld {
 public:
  btrfs::Result<ReaderGround> ground(const std::string& path) override {
    auto fd = btrfs::Fd::open(path, O_RDONLY | O_NONBLOCK);
    if (!fd) return fd.error();
    return reader_ground(fd->get());
  }
  const RootReader& reader(ReaderKind kind) override { return reader_of(kind); }
  RunKernel& kernel(ReaderKind kind) override {
    return kind == ReaderKind::Tree ? kernel_run() : kernel_walked();
  }
  SubvolumeGround& subvolume_ground() override { return machine_subvolume_ground(); }
  std::string filesystem_id(const std::string& path, bool want_file, std::string* why) override {
    return machine_fsid_of(path, want_file, why);
  }
};

}  // namespace

RunWorld::~RunWorld() = default;

RunWorld& machine_world() {
  static MachineWorld world;
  return world;
}

}  // namespace btrdedupe
