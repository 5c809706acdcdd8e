#include "src/run/run_kernel.h"

#include <fcntl.h>
#include <unistd.h>

#include "btrfs/fd.h"
#include "src/dedupe/io_threads.h"

namespace btrdedupe {
namespace {

class Kernel final : public RunKernel {
 public:
  DedupeKernel& dedupe() override { return fideduperange(); }
  RewriteKernel& rewrite() override { return kernel_rewrite(); }
  btrfs::Result<std::vector<bool>> still_allocated(const std::string& root,
                                                   const std::vector<PhysicalExtent>& extents,
                                                   uint64_t scanned_at) override {
    auto fd = btrfs::Fd::open(root, O_RDONLY | O_NONBLOCK);
    if (!fd) return fd.error();
    ::syncfs(fd->get());  // freed extents leave the tree when the transaction commits
    return btrdedupe::still_allocated(fd->get(), extents, scanned_at);
  }
  std::vector<btrfs::Subvolume> subvolumes(const std::string& root) override {
    auto all = btrfs::list_subvolumes(root);
    return all ? std::move(*all) : std::vector<btrfs::Subvolume>{};
  }
  unsigned io_threads(const std::string& root) override { return default_io_threads(root); }
};

}  // namespace

RunKernel::~RunKernel() = default;

RunKernel& kernel_run() {
  static Kernel kernel;
  return kernel;
}

}  // namespace btrdedupe
