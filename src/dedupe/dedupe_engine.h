// The dedupe phase: runs a DedupePlan's rounds through FIDEDUPERANGE with a pool of
// workers. A producer opens each round's files in plan (physical) order and asks their
// ranges into the page cache a bounded window ahead of the workers, so the kernel's byte
// compare (one folio at a time, no readahead) hits warm pages instead of taking the slow
// cold path, and the device reads while the CPUs compare.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "btrfs/items.h"
#include "src/dedupe/dedupe_kernel.h"
#include "src/dedupe/round_pace.h"
#include "src/plan/dedupe_plan.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// How a round's ranges are brought into the page cache before its call
// (docs/benchmarks-history.md, "Prefetch ahead of the workers", compares them).
enum class Prefetch {
  None,       // the kernel's compare reads cold pages one folio at a time
  Read,       // pread the ranges sequentially, copying them to a scratch buffer
  Readahead,  // readahead(2): asynchronous, may return before the pages are in
  Fadvise,    // posix_fadvise(POSIX_FADV_WILLNEED): large asynchronous reads, no copy;
              // the default, fastest measured (docs/benchmarks-history.md) for rounds under
              // 1 MiB; longer rounds are read by their worker, which was faster for them
              // (docs/benchmarks.md, session 8)
};

struct DedupeOptions {
  unsigned io_threads = 2;
  Prefetch prefetch = Prefetch::Fadvise;
  // Bytes of source and destination ranges opened and prefetched ahead of the calls: the
  // device reads the coming rounds while the CPUs compare the current ones. Bounded, so the
  // page cache the run fills ahead stays small under a memory limit.
  uint64_t prefetch_window = 64ULL << 20;
  unsigned eagain_retries = 3;     // a send on the destination's subvolume: wait and retry
  unsigned eagain_wait_ms = 1000;
  // Called after each round with the bytes deduped so far (from worker threads, serialised).
  std::function<void(uint64_t)> on_progress;
  // When set and true, workers start no new round (and no retry): a clean stop.
  const std::atomic<bool>* stop = nullptr;
  // When set, receives one byte per plan round: 1 when the round was run (or its files were
  // found changed), 0 when a stop left it for a later run.
  std::vector<uint8_t>* round_started = nullptr;
  // When the scan began: a file whose inode changed (ctime) since then was written, so a
  // range of it the kernel finds not equal is a change, not an unequal proposal to narrow.
  // Zero (unknown): every such range counts as a change.
  btrfs::Timespec scan_started;
  // Where the calls go: nullptr is the kernel (fideduperange()); tests pass a stand-in.
  DedupeKernel* kernel = nullptr;
  // Asked before each round is started (JobOptions::pace); nullptr: never waits.
  RoundPace* pace = nullptr;
};

struct DedupeStats {
  uint64_t calls = 0;              // FIDEDUPERANGE ioctls
  uint64_t bytes_deduped = 0;      // sum of bytes the kernel reports shared
  std::map<uint64_t, uint64_t> bytes_by_subvolume;  // of those, by the destination's subvolume
  uint64_t ranges_same = 0;
  uint64_t ranges_differ = 0;      // content was not equal: changed since the scan
  // Content was not equal though neither file changed: the sums proposed more than is
  // equal. Narrowed to the equal parts, which add bytes_narrowed to bytes_deduped.
  uint64_t ranges_unequal = 0, bytes_narrowed = 0;
  uint64_t ranges_changed = 0;     // skipped: the file changed, vanished or was replaced
  uint64_t ranges_failed = 0;      // an errno from the kernel (see errors_by_code)
  uint64_t ranges_retried = 0;     // EAGAIN (a send): tried again after eagain_wait_ms
  uint64_t bytes_prefetched = 0;
  std::map<int, uint64_t> errors_by_code;  // errno -> ranges
  std::vector<std::string> messages;       // first few, "path: what happened"
  bool stopped = false;                    // DedupeOptions::stop ended the run early
  // The filesystem is full: after the first ENOSPC no new round (or retry) starts, since
  // every one would fail the same way after the kernel's costly attempt to find space.
  bool no_space = false;
  uint64_t ranges_not_tried = 0;           // ranges of the rounds not started because of it
  // Left by a stop (a signal, --max-runtime): rounds never started, and the bytes they
  // would have shared; the next run with the hashfile does them.
  uint64_t rounds_not_started = 0, bytes_not_started = 0;
  // Adds the figures of a later window's dedupe (a run read in windows) to these.
  void add(const DedupeStats& more);
};

DedupeStats run_dedupe(const ScanResult& scan, const DedupePlan& plan, const DedupeOptions& options);

// Why the kernel refused a destination, in words.
std::string dedupe_error_reason(int code);

}  // namespace btrdedupe
