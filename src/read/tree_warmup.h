// Cold-cache read-ahead for tree walks: background threads that read a tree ahead of the
// walk that needs it.
//
// Why: tree search (BTRFS_IOC_TREE_SEARCH_V2) reads a cold tree one metadata leaf at a
// time, synchronously, with no readahead, so a walk waits for each 16 KiB read in turn
// (a subvolume tree of ~150 MiB: 1.4 s cold against 0.3 s warm; the csum tree 0.46 s
// against 0.03 s). The storage serves concurrent reads well. A TreeWarmup has a few
// threads walk LATER parts of the same key range at the same time and throw the items
// away: the leaves land in the page cache, and the walk that matters finds them there.
//
// Contract:
// - It only reads. What any walk returns is the same with or without it, and with any
//   number of threads; turning it off (ScanOptions::warmup_threads = 0) changes timings
//   only.
// - Best effort: an error in a warm-up thread (probe or walk) ends that thread quietly;
//   the walk that matters meets the same error and reports it.
// - Bounded work, no second full walk: the range [first, last present key] is cut into
//   chunks, claimed in key order. With a leader (the caller's own walk from the start,
//   reported through leader_at), chunk 0 is the leader's, and a thread skips a chunk the
//   leader has entered and abandons one when the leader catches up with it: from there the
//   leader reads the leaves anyway. A thread also leaves a chunk whose search calls come
//   back as fast as cached ones do (a warm tree costs each thread ~2 calls per chunk, not
//   a second walk on the CPU the leader needs). Threads end when the chunks run out.
// - RAII: the destructor (or cancel()) stops the threads, each within one search call
//   (<= 64 KiB of items), and joins them: no thread outlives the object, on any path.
//   `source` (and the fd under it) must stay until then.
// - Threads share only atomics (stop flag, leader position, next chunk) and the chunk plan,
//   which is written once under std::call_once before any thread reads it.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "btrfs/tree_source.h"

namespace btrdedupe {

// The key range to warm, along one key field (the "coordinate").
struct WarmupRange {
  enum class Axis {
    Objectid,  // keys (x, any type, any offset): a subvolume tree's inodes
    Offset,    // keys (objectid, type, x): the csum tree's disk bytenrs
  };
  uint64_t tree_id = 0;
  Axis axis = Axis::Objectid;
  uint64_t objectid = 0;  // Axis::Offset: the fixed objectid
  uint8_t type = 0;       // Axis::Offset: the fixed type
  uint64_t first = 0, last = std::numeric_limits<uint64_t>::max();  // coordinate bounds
  // Smallest chunk worth a thread, in coordinate units: a smaller range gets fewer chunks,
  // a tiny one none (its threads end at once).
  uint64_t min_chunk = 1;
};

// Inodes [first, last] of subvolume tree `subvolume`, in chunks of a few leaves at least
// (a smaller tree gets fewer chunks, a tiny one none).
WarmupRange subvolume_inodes_range(uint64_t subvolume, uint64_t first, uint64_t last);

// What the threads did; complete once they are joined (after join() or cancel()).
struct WarmupStats {
  uint64_t chunks = 0;     // in the plan (0: nothing to warm, or the probe failed)
  uint64_t walked = 0;     // chunks a thread walked (to the end or until overtaken)
  uint64_t abandoned = 0;  // of those, left when the leader caught up
  uint64_t cached = 0;     // of those, left when found already cached (by their speed)
  uint64_t skipped = 0;    // chunks the leader had entered before a thread claimed them
  uint64_t items = 0;      // items read and discarded
  uint64_t searches = 0;   // TREE_SEARCH_V2 calls, probes included
};

class TreeWarmup {
 public:
  // Starts `threads` threads (0: none, the object does nothing). with_leader: the caller
  // walks the range itself from its start and reports its position through leader_at;
  // leader_start: its position before the first leader_at.
  // source: searched by all the threads at once (TreeSource's contract allows it).
  TreeWarmup(btrfs::TreeSource& source, const WarmupRange& range, unsigned threads,
             bool with_leader, uint64_t leader_start = 0);
  ~TreeWarmup();
  TreeWarmup(const TreeWarmup&) = delete;
  TreeWarmup& operator=(const TreeWarmup&) = delete;

  // The leader has reached coordinate x (non-decreasing; cheap: one relaxed store).
  void leader_at(uint64_t x) { leader_.store(x, std::memory_order_relaxed); }

  // Waits for the threads to run out of chunks.
  void join();
  // Asks the threads to stop, each within one search call, without waiting for them.
  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  // Stops the threads and waits for them. Idempotent; the destructor calls it.
  void cancel();
  // Valid after join() or cancel().
  WarmupStats stats() const;

 private:
  void run(size_t slot);
  void plan(WarmupStats& st);
  bool walk(uint64_t lo, uint64_t hi, WarmupStats& st);
  bool overtaken(uint64_t x) const {
    return with_leader_ && leader_.load(std::memory_order_relaxed) >= x;
  }

  btrfs::TreeSource& source_;
  const WarmupRange range_;
  const bool with_leader_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> leader_{0};
  std::atomic<size_t> next_chunk_{0};
  std::once_flag planned_;
  std::vector<uint64_t> bounds_;       // chunk i: [bounds_[i], bounds_[i+1]); set in plan()
  std::vector<WarmupStats> per_thread_;  // slot i written only by thread i
  std::vector<std::thread> threads_;
};

}  // namespace btrdedupe
