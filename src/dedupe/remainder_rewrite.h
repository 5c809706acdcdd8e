// The rewrite of small remainders, after the ordinary rounds (src/plan/remainder_plan.h plans
// it; docs/design.md, "Rewriting small remainders"). The one place btrdedupe writes data,
// and never into a user's file: each remainder is copied into an unnamed file (O_TMPFILE)
// with the file's nodatacow and compression settings, then shared back onto the file with
// FIDEDUPERANGE, so the kernel compares the bytes (a file changed since it was read gets
// DIFFERS and is left as it was) and mtime stays. Closing the copy leaves nothing behind.
//
// Before an extent's remainders are written, its references are read again (LOGICAL_INO):
// unless they are exactly its remainder ranges (the rounds moved everything else off it,
// and nothing the scan did not see holds it), nothing is written for it.
// Any failure falls back to plain dedupe: that remainder stays on the old extent, the
// extent stays allocated. Counted and said once, never an error of the run. After an
// ENOSPC, EDQUOT, EROFS or a refused temp file (EOPNOTSUPP), nothing more is tried.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "src/plan/remainder_plan.h"
#include "src/dedupe/rewrite_kernel.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct RewriteOptions {
  // Where the calls go: nullptr is the kernel (kernel_rewrite()); tests pass a stand-in.
  RewriteKernel* kernel = nullptr;
  const std::atomic<bool>* stop = nullptr;  // when set and true, start no new extent
  std::function<void(uint64_t)> on_progress;  // bytes written so far
  // Which of the plan's extents: those rewritten before the rounds (before_rounds), or after.
  bool before_rounds = false;
};

struct RewriteStats {
  // What the plan chose, and what the budget left (filled by the planning stage).
  uint64_t planned_extents = 0, planned_bytes = 0;
  uint64_t skipped_for_budget = 0, bytes_skipped_for_budget = 0;
  uint64_t extents_rewritten = 0;  // every remainder range of the extent shared from a copy
  uint64_t ranges_rewritten = 0;
  uint64_t bytes_written = 0;      // into copies (also those whose dedupe then failed)
  // Disk space the new extents of the rewritten remainders take (compressed size if they
  // are), by the file's subvolume: the freed figure is net of it.
  uint64_t disk_bytes_allocated = 0;
  std::map<uint64_t, uint64_t> allocated_by_subvolume;
  // After the rounds, held by more than its remainders (a round left it, or a reference
  // the scan did not see): nothing written for it.
  uint64_t extents_still_referenced = 0;
  uint64_t ranges_fell_back = 0;   // a failure: that remainder stays where it was
  std::string fallback_reason;     // the first failure, "path: what happened"
  void add(const RewriteStats& more);
};

RewriteStats rewrite_remainders(const ScanResult& scan, const RemainderPlan& plan,
                                const RewriteOptions& options);

}  // namespace btrdedupe
