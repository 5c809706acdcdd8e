// What a run asks of the filesystem beyond reading its trees: the dedupe and rewrite calls,
// which planned extents the extent tree still holds afterwards, the subvolume list and how
// many dedupe workers the storage takes. Behind one interface so that a whole run (the
// batch loop and its stages) is driven in unit tests by a scripted filesystem, without root;
// the kernel's own answers are tested on real btrfs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/result.h"
#include "btrfs/subvolume.h"
#include "src/dedupe/dedupe_kernel.h"
#include "src/dedupe/rewrite_kernel.h"
#include "src/plan/freed_space.h"

namespace btrdedupe {

// Contract: calls come from the run's thread, except dedupe()'s, which its workers share.
class RunKernel {
 public:
  virtual ~RunKernel();
  virtual DedupeKernel& dedupe() = 0;
  virtual RewriteKernel& rewrite() = 0;
  // Whether each of `extents` is still allocated once the run's changes are committed
  // (still_allocated in src/plan/freed_space.h). `now`: the confirmation's read of the
  // trees after the dedupe (its roots name the filesystem); `scanned_at`: the generation
  // the run's scan began at.
  virtual btrfs::Result<std::vector<bool>> still_allocated(
      const ScanResult& now, const std::vector<PhysicalExtent>& extents,
      uint64_t scanned_at) = 0;
  // Every subvolume of the filesystem of `root`; empty when they cannot be listed.
  virtual std::vector<btrfs::Subvolume> subvolumes(const std::string& root) = 0;
  // Dedupe workers for the filesystem of `root` when --io-threads is not given.
  virtual unsigned io_threads(const std::string& root) = 0;
};

// The real kernel: FIDEDUPERANGE, syncfs and the extent tree, libbtrfsutil, sysfs.
RunKernel& kernel_run();
// The real kernel as a path walk reaches it (src/read/path_walk.h), with no extent tree to
// ask: an extent is still allocated while the confirmation's walk maps any of its bytes,
// or while FIEMAP could not vouch for its references (FileExtent::refs_unknown). No
// remainder is rewritten (no backrefs to find them) and no subvolume is listed.
RunKernel& kernel_walked();

}  // namespace btrdedupe
