#include "src/dedupe/dedupe_kernel.h"

namespace btrdedupe {
namespace {

class Fideduperange final : public DedupeKernel {
 public:
  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) override {
    return btrfs::dedupe_range(src_fd, src_offset, length, destinations);
  }
};

}  // namespace

DedupeKernel::~DedupeKernel() = default;

DedupeKernel& fideduperange() {
  static Fideduperange kernel;
  return kernel;
}

}  // namespace btrdedupe
