// One run_dedupe call (internal to the dedupe engine): the producer, the workers and what
// they share. Declared here because its pool (src/dedupe/dedupe_run.cpp) and the second tries
// after the pool (src/dedupe/dedupe_retries.cpp) are separate steps over the same state.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "btrfs/dedupe_range.h"
#include "btrfs/fd.h"
#include "src/dedupe/dedupe_engine.h"

namespace btrdedupe {

// DedupeStats::messages holds the first this many, over a whole run.
inline constexpr size_t kMaxMessages = 20;
inline constexpr size_t kPrefetchChunk = 1 << 20;

struct PendingRetry {
  size_t round;
  size_t destination;
};

// A round whose files are open and whose ranges were asked into the page cache, waiting
// for a worker to make its call.
struct PreparedRound {
  size_t index = 0;
  std::optional<size_t> only;      // a retry of one destination
  btrfs::Fd source;
  std::vector<btrfs::Fd> fds;
  std::vector<size_t> which;       // destination index in the round for each open fd
  uint64_t window_bytes = 0;       // counted against DedupeOptions::prefetch_window
  // Ranges this round brings into the page cache, dropped once its calls are made (the
  // source, then one per fd): those cached before are left as they were.
  bool release_source = false;
  std::vector<bool> release;
};

class DedupeRun {
 public:
  DedupeRun(const ScanResult& scan, const DedupePlan& plan, const DedupeOptions& options)
      : scan_(scan),
        plan_(plan),
        options_(options),
        kernel_(options.kernel ? *options.kernel : fideduperange()),
        started_(plan.rounds.size(), 0) {}

  DedupeStats run();

 private:
  // Asynchronous prefetch (fadvise, readahead) is issued here, ahead of the workers, so the
  // device reads the next rounds while the CPUs compare the current ones. A synchronous
  // read would serialise the pool behind this thread: that mode reads in the worker.
  bool prefetch_ahead() const;
  bool read_in_worker(size_t r) const;

  // Opens and prefetches rounds in plan (physical) order into a queue bounded by bytes
  // and open files, so memory and page cache use stay flat whatever the plan's size.
  void produce();
  std::optional<PreparedRound> pop();
  void work();
  bool stopping();

  // Opens round r's files, all destinations or only `only` (a retry), proving each is the
  // file scanned; with `warm_now`, asks its ranges into the page cache.
  std::optional<PreparedRound> prepare(size_t r, std::optional<size_t> only, bool warm_now,
                                       std::vector<uint8_t>& buf);
  void warm(const PreparedRound& p, std::vector<uint8_t>& buf, Prefetch how);
  // Drops from the page cache the ranges the round brought in (PreparedRound::release).
  // Why: under a memory cap, pages of rounds already made crowded out those prefetched for
  // the next calls, which then read them again a page at a time (docs/design.md).
  void release(const PreparedRound& p);
  // Whether the round that opens `fd` brings the range into the page cache: not cached
  // now, or brought in by a round still holding it (then this round holds it too).
  bool hold_range(uint32_t file, int fd, uint64_t offset, uint64_t length);
  // The last round holding the range drops it.
  void drop_range(uint32_t file, int fd, uint64_t offset, uint64_t length);

  // Where each open destination of a round stands (by index into PreparedRound::fds): the
  // bytes shared so far, and whether another call may still make progress.
  struct RoundProgress {
    std::vector<uint64_t> done;
    std::vector<bool> active;
  };
  // Makes the calls of a prepared round.
  void execute(PreparedRound& p, bool last_attempt);
  // One call from `at` for the destinations `idx` (indexes into p.fds), booked.
  void make_call(const PreparedRound& p, const std::vector<size_t>& idx, uint64_t at,
                 bool last_attempt, RoundProgress& progress);
  // Books a call the kernel refused as a whole (mu_ held): a change when the source was
  // written since the scan, else a failure.
  void book_refused_call(const DedupeRound& round, const std::vector<size_t>& idx,
                         const btrfs::Error& error, bool source_changed,
                         RoundProgress& progress);
  // Books one destination's outcome (mu_ held).
  void record(const DedupeRound& round, size_t d, const btrfs::DedupeOutcome& o, bool last_attempt,
              size_t r, uint64_t& done, std::vector<bool>::reference active);

  void retry_eagain();
  // Ranges the kernel found not equal: a file written since the scan is a change; two
  // unchanged files mean the sums proposed more than is equal, and the range is narrowed
  // to its equal parts (src/match/range_narrowing.h). After the pool: no lock is needed.
  void narrow_unequal();
  bool written_since_scan(int fd) const;

  void message_locked(std::string m);

  const ScanResult& scan_;
  const DedupePlan& plan_;
  const DedupeOptions& options_;
  DedupeKernel& kernel_;
  std::vector<uint8_t> started_;  // by round: its call was made (or its files were found changed)
  std::mutex mu_;
  std::mutex queue_mu_;
  // Ranges the run brought into the page cache, by (file, offset), and how many rounds
  // hold each: a source with more destinations than one call takes is the source of
  // rounds queued together, and the first to finish must not drop what the next compares.
  std::mutex held_mu_;
  std::map<std::pair<uint32_t, uint64_t>, unsigned> held_ranges_;
  std::condition_variable queue_ready_, queue_space_;
  std::deque<PreparedRound> queue_;
  uint64_t queued_bytes_ = 0;
  size_t queued_fds_ = 0;
  bool produced_all_ = false;
  size_t produced_ = 0;  // rounds the producer took up (its thread only)
  DedupeStats stats_;
  std::vector<PendingRetry> retries_;
  struct Unequal {
    size_t round, destination;
    uint64_t done;  // bytes of the range shared before the call that differed
  };
  std::vector<Unequal> unequal_;
  std::atomic<bool> no_space_{false};  // an ENOSPC was seen: start nothing more
};

}  // namespace btrdedupe
