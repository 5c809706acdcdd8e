// The dedupe engine's one way to the kernel: the FIDEDUPERANGE calls it makes, behind an
// interface, so its handling of the kernel's answers (short progress, DIFFERS, EAGAIN,
// ENOSPC) can be tested with a scripted stand-in and no btrfs.
#pragma once

#include <cstdint>
#include <span>

#include "btrfs/dedupe_range.h"
#include "btrfs/result.h"

namespace btrdedupe {

// Contract: what btrfs::dedupe_range promises (btrfs/dedupe_range.h). One call shares
// [src_offset, src_offset + length) of src_fd with each destination, or says why not:
// one outcome per destination, in order, and an Error for a failure of the whole call.
// Called from several worker threads at once.
class DedupeKernel {
 public:
  virtual ~DedupeKernel();
  virtual btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) = 0;
};

// The real kernel: btrfs::dedupe_range.
DedupeKernel& fideduperange();

}  // namespace btrdedupe
