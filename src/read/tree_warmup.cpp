#include "src/read/tree_warmup.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <system_error>


namespace btrdedupe {
namespace {

// Chunks per thread: enough that a thread overtaken by the leader, or one that drew a
// sparse chunk, finds more work ahead; few enough that a chunk spans many leaves.
constexpr size_t kChunksPerThread = 8;
// Result area of one warm-up search: about four 16 KiB leaves of items, so a stop or an
// overtaking is noticed after a few leaf reads.
constexpr size_t kWalkBufferBytes = 64 << 10;
// A search call over cached leaves: a few tens of microseconds, a few hundred on a loaded
// CPU. One that reads its ~4 leaves from disk waits for each (here 0.3 ms apiece on an
// SSD-backed virtio disk; ~0.1 ms on a fast NVMe drive). After this many cached calls in
// a row the chunk is taken to be cached (already warm, or just read by the leader): the
// thread moves on rather than walk it a second time on the CPU the leader needs.
constexpr auto kCachedCall = std::chrono::microseconds(300);
constexpr unsigned kCachedCallsInARow = 2;

btrfs::SearchKey box(const WarmupRange& r, uint64_t lo, uint64_t hi) {
  btrfs::SearchKey key;
  key.tree_id = r.tree_id;
  if (r.axis == WarmupRange::Axis::Objectid) {
    key.min_objectid = lo;
    key.max_objectid = hi;
  } else {
    key.min_objectid = key.max_objectid = r.objectid;
    key.min_type = key.max_type = r.type;
    key.min_offset = lo;
    key.max_offset = hi;
  }
  return key;
}

uint64_t coordinate(const WarmupRange& r, uint64_t objectid, uint64_t offset) {
  return r.axis == WarmupRange::Axis::Objectid ? objectid : offset;
}

// A chunk of a subvolume tree for a warm-up thread spans at least this many inode
// numbers (a few leaves' worth).
constexpr uint64_t kWarmupMinInodes = 256;

}  // namespace

WarmupRange subvolume_inodes_range(uint64_t subvolume, uint64_t first, uint64_t last) {
  WarmupRange range;
  range.tree_id = subvolume;
  range.first = first;
  range.last = last;
  range.min_chunk = kWarmupMinInodes;
  return range;
}

TreeWarmup::TreeWarmup(btrfs::TreeSource& source, const WarmupRange& range, unsigned threads,
                       bool with_leader, uint64_t leader_start)
    : source_(source), range_(range), with_leader_(with_leader), leader_(leader_start),
      per_thread_(threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    try {
      threads_.emplace_back([this, i] { run(i); });
    } catch (const std::system_error&) {
      break;  // no more threads to be had: warm with those started (or none)
    }
  }
}

TreeWarmup::~TreeWarmup() { cancel(); }

void TreeWarmup::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void TreeWarmup::cancel() {
  request_stop();
  join();
}

WarmupStats TreeWarmup::stats() const {
  WarmupStats all;
  for (const auto& s : per_thread_) {
    all.chunks = std::max(all.chunks, s.chunks);
    all.walked += s.walked;
    all.abandoned += s.abandoned;
    all.skipped += s.skipped;
    all.cached += s.cached;
    all.items += s.items;
    all.searches += s.searches;
  }
  return all;
}

// The chunk plan: the range from its first to its last present coordinate (found by
// single-item probes, a bisection of about 64 of them, most on cached nodes), cut evenly.
// Runs once, in whichever thread gets here first; the others wait for it.
void TreeWarmup::plan(WarmupStats& st) {
  auto first_at = [&](uint64_t x) -> std::optional<uint64_t> {
    ++st.searches;
    auto k = source_.first_key(box(range_, x, range_.last));
    if (!k || !*k) return std::nullopt;  // an error ends the plan like an empty range
    return coordinate(range_, (*k)->objectid, (*k)->offset);
  };
  const auto lo = first_at(range_.first);
  if (!lo) return;
  uint64_t a = *lo, b = range_.last;  // a: present; the last present one is in [a, b]
  while (a < b && !stop_.load(std::memory_order_relaxed)) {
    const uint64_t mid = a + (b - a) / 2 + 1;
    if (const auto x = first_at(mid)) {
      a = *x;
    } else {
      b = mid - 1;
    }
  }
  const uint64_t hi = a;
  const size_t threads = per_thread_.size();
  const uint64_t span = hi - *lo;  // + 1 coordinates
  const uint64_t by_size = span / std::max<uint64_t>(range_.min_chunk, 1);
  const size_t chunks = static_cast<size_t>(
      std::min<uint64_t>(threads * kChunksPerThread + (with_leader_ ? 1 : 0), by_size));
  // With a leader, chunk 0 is its own: one chunk leaves the threads nothing.
  if (chunks < (with_leader_ ? 2u : 1u)) return;
  // Chunk i: [bounds_[i], bounds_[i+1] - 1]; the last one ends at hi.
  bounds_.resize(chunks + 1);
  const uint64_t step = span / chunks, extra = span % chunks;
  for (size_t i = 0; i < chunks; ++i) bounds_[i] = *lo + step * i + std::min<uint64_t>(i, extra);
  bounds_[chunks] = hi;
  next_chunk_.store(with_leader_ ? 1 : 0, std::memory_order_relaxed);
}

// Reads the items of [lo, hi] and drops them; leaves early when stopped, overtaken by the
// leader, or when the chunk turns out to be cached. False on an error.
bool TreeWarmup::walk(uint64_t lo, uint64_t hi, WarmupStats& st) {
  const auto cursor = source_.search(box(range_, lo, hi), kWalkBufferBytes);
  btrfs::ItemCursor& search = *cursor;
  ++st.walked;
  bool ok = true;
  auto call_start = std::chrono::steady_clock::now();
  uint64_t calls = 0;
  unsigned fast = 0;  // calls in a row that found their leaves cached, by their time
  for (;;) {
    auto next = search.next();
    if (!next) {  // the leader meets the same error and reports it
      ok = false;
      break;
    }
    if (!*next || stop_.load(std::memory_order_relaxed)) break;
    ++st.items;
    if (search.ioctl_calls() != calls) {  // this item came with a new call
      calls = search.ioctl_calls();
      const auto now = std::chrono::steady_clock::now();
      fast = now - call_start < kCachedCall ? fast + 1 : 0;
      call_start = now;
      if (fast >= kCachedCallsInARow) {
        ++st.cached;
        break;
      }
    }
    if (overtaken(coordinate(range_, (*next)->objectid, (*next)->offset))) {
      ++st.abandoned;
      break;
    }
  }
  st.searches += search.ioctl_calls();
  return ok;
}

void TreeWarmup::run(size_t slot) {
  WarmupStats st;
  try {
    std::call_once(planned_, [&] { plan(st); });
    const size_t chunks = bounds_.empty() ? 0 : bounds_.size() - 1;
    st.chunks = chunks;
    while (!stop_.load(std::memory_order_relaxed)) {
      const size_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) break;
      const uint64_t lo = bounds_[c];
      const uint64_t hi = c + 1 < chunks ? bounds_[c + 1] - 1 : bounds_[chunks];
      if (overtaken(lo)) {  // the leader is in it or past it and reads it anyway
        ++st.skipped;
        continue;
      }
      if (!walk(lo, hi, st)) break;
    }
  } catch (const std::exception&) {
    // Out of memory in a helper: the warm-up is only ever an optimisation.
  }
  per_thread_[slot] = st;
}

}  // namespace btrdedupe
