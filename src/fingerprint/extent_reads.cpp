#include "src/fingerprint/extent_reads.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "btrfs/fd.h"
#include "src/fingerprint/extent_prefetch.h"
#include "src/fingerprint/sector_checksum.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

constexpr size_t kMaxReportedErrors = 20;
constexpr size_t kReadChunk = 1 << 20;
// Large enough that a worker streams several MiB forward before it jumps to the next free
// batch, small enough that the last batches still spread over the workers.
constexpr uint64_t kBatchBytes = 2ULL << 20;
// How far ExtentPrefetch runs ahead of the workers: 32 MiB of data, a few MiB on disk when
// compressed, a small part of a memory cap.
constexpr size_t kBatchesAhead = 16;
// Monitors redraw at most every 100-200 ms; waking more often only costs the caller CPU.
constexpr auto kProgressInterval = std::chrono::milliseconds(100);

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// An error with the position (in disk order) of the extent it came from, so the first few
// errors of a run are the same whichever worker met them.
struct PlacedError {
  size_t position = 0;
  std::string message;
};

// One worker: its buffer, the file it has open, what it counted.
class ExtentReader {
 public:
  ExtentReader(const ScanResult& scan, const SectorChecksum& algo)
      : scan_(scan), algo_(algo), buf_(kReadChunk + scan.fs.sectorsize) {}

  // Reads the uncovered sectors of `e`, the extent at `position` in disk order.
  void read(size_t position, ExtentSums& e);

  FingerprintStats stats;
  std::vector<PlacedError> errors;  // the first kMaxReportedErrors, in disk order

 private:
  const btrfs::Fd* open(uint32_t file, size_t position);
  void note_error(size_t position, std::string what);

  const ScanResult& scan_;
  const SectorChecksum& algo_;
  std::vector<uint8_t> buf_;
  uint32_t open_file_ = std::numeric_limits<uint32_t>::max();
  btrfs::Fd fd_;
};

void ExtentReader::note_error(size_t position, std::string what) {
  ++stats.read_errors;
  if (errors.size() < kMaxReportedErrors) errors.push_back({position, std::move(what)});
}

// Consecutive extents in disk order mostly belong to one file: keeping it open spares a
// path walk per extent and lets its readahead window grow across them.
const btrfs::Fd* ExtentReader::open(uint32_t file, size_t position) {
  if (file == open_file_ && fd_.valid()) return &fd_;
  fd_.reset();
  open_file_ = std::numeric_limits<uint32_t>::max();
  auto fd = open_scanned_file(scan_, scan_.files[file], false);
  if (!fd) {
    note_error(position, fd.error().message());
    return nullptr;
  }
  // Doubles the readahead window: the device sees requests of several MiB even though
  // a compressed extent is read 128 KiB at a time. Only a hint: failure changes nothing.
  (void)::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  fd_ = std::move(*fd);
  open_file_ = file;
  return &fd_;
}

void ExtentReader::read(size_t position, ExtentSums& e) {
  const uint32_t ss = scan_.fs.sectorsize;
  const uint16_t cs = scan_.fs.csum_size;
  bool read_any = false;
  for (size_t r = e.first_ref; r < e.end_ref; ++r) {
    const FileExtent& ref = scan_.extents[r];
    const uint64_t s_begin = ref.extent_offset / ss;
    const uint64_t s_end = div_up(ref.extent_offset + ref.length, ss);
    uint64_t s = s_begin;
    while (s < s_end && e.known[s]) ++s;
    if (s == s_end) continue;
    const btrfs::Fd* fd = open(ref.file, position);
    if (!fd) continue;  // another reference to the extent may still be readable
    while (s < s_end) {
      if (e.known[s]) {
        ++s;
        continue;
      }
      uint64_t run_end = s;
      while (run_end < s_end && !e.known[run_end] && (run_end - s) * ss < kReadChunk) ++run_end;
      const uint64_t offset = ref.file_offset + s * ss - ref.extent_offset;
      const size_t want = static_cast<size_t>((run_end - s) * ss);
      size_t got = 0;
      while (got < want) {
        const ssize_t n = ::pread(fd->get(), buf_.data() + got, want - got,
                                  static_cast<off_t>(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          const std::string what = "read " + file_path(scan_, scan_.files[ref.file]);
          note_error(position, btrfs::errno_error(what).message());
          break;
        }
        if (n == 0) break;  // EOF: the tail sector is zero-padded below
        got += static_cast<size_t>(n);
      }
      stats.bytes_read += got;
      read_any = true;
      if (got == 0) break;  // truncated since the scan: leave the rest unknown
      // The kernel sums a final partial sector as the page holds it: zeros past EOF.
      std::memset(buf_.data() + got, 0, want - got);
      const uint64_t full = div_up(got, ss);
      for (uint64_t k = 0; k < full; ++k) {
        algo_.compute({buf_.data() + k * ss, ss}, &e.sums[(s + k) * cs]);
        e.known[s + k] = true;
      }
      const uint64_t asked = run_end - s;
      s += full;
      if (full < asked) break;  // short read: the file is shorter than scanned
    }
  }
  if (read_any) ++stats.extents_read;
}

// [begin, end) of to_read per batch: consecutive extents of about kBatchBytes.
std::vector<std::pair<size_t, size_t>> make_batches(const std::vector<ExtentSums>& extents,
                                                    const std::vector<size_t>& to_read,
                                                    uint32_t sectorsize) {
  std::vector<std::pair<size_t, size_t>> batches;
  for (size_t i = 0; i < to_read.size();) {
    const size_t begin = i;
    uint64_t bytes = 0;
    while (i < to_read.size() && (i == begin || bytes < kBatchBytes))
      bytes += extents[to_read[i++]].sectors * sectorsize;
    batches.emplace_back(begin, i);
  }
  return batches;
}

void merge(std::vector<ExtentReader>& readers, FingerprintStats& st) {
  std::vector<PlacedError> errors;
  for (auto& r : readers) {
    st.extents_read += r.stats.extents_read;
    st.bytes_read += r.stats.bytes_read;
    st.read_errors += r.stats.read_errors;
    errors.insert(errors.end(), std::make_move_iterator(r.errors.begin()),
                  std::make_move_iterator(r.errors.end()));
  }
  // Each reader's list is its first errors in disk order, so the first overall are among them.
  std::stable_sort(errors.begin(), errors.end(), [](const PlacedError& a, const PlacedError& b) {
    return a.position < b.position;
  });
  for (auto& e : errors) {
    if (st.errors.size() >= kMaxReportedErrors) break;
    st.errors.push_back(std::move(e.message));
  }
}

// One batch: nothing to read ahead of, and no thread to start (progress from this loop).
void read_in_this_thread(ExtentReader& reader, std::vector<ExtentSums>& extents,
                         const std::vector<size_t>& to_read, uint32_t sectorsize,
                         const std::function<void(uint64_t bytes_done)>& on_progress) {
  uint64_t done = 0;
  for (size_t i = 0; i < to_read.size(); ++i) {
    ExtentSums& e = extents[to_read[i]];
    reader.read(i, e);
    done += e.sectors * sectorsize;
    if (on_progress) on_progress(done);
  }
}

// One worker per reader takes the batches in turn while the prefetch reads ahead of them;
// progress is reported from the calling thread, which waits for them.
void read_in_workers(const ScanResult& scan, std::vector<ExtentSums>& extents,
                     const std::vector<size_t>& to_read,
                     const std::vector<std::pair<size_t, size_t>>& batches,
                     std::vector<ExtentReader>& readers,
                     const std::function<void(uint64_t bytes_done)>& on_progress) {
  const uint32_t ss = scan.fs.sectorsize;
  const size_t n = readers.size();
  std::atomic<size_t> next_batch{0};
  std::atomic<uint64_t> done{0};
  std::mutex mu;
  std::condition_variable finished_cv;
  size_t finished = 0;
  ExtentPrefetch ahead(scan, extents, to_read, batches);
  auto work = [&](ExtentReader& reader) {
    for (size_t b; (b = next_batch.fetch_add(1)) < batches.size();) {
      ahead.taken(b);
      for (size_t i = batches[b].first; i < batches[b].second; ++i) {
        ExtentSums& e = extents[to_read[i]];
        reader.read(i, e);
        done.fetch_add(e.sectors * ss, std::memory_order_relaxed);
      }
    }
    const std::lock_guard lock(mu);
    ++finished;
    finished_cv.notify_one();
  };
  std::jthread prefetch([&](std::stop_token stop) { ahead.run(stop, kBatchesAhead); });
  std::vector<std::jthread> workers;
  workers.reserve(n);
  for (auto& reader : readers) workers.emplace_back(work, std::ref(reader));
  {
    std::unique_lock lock(mu);
    uint64_t reported = 0;
    for (;;) {
      const bool all = finished_cv.wait_for(lock, kProgressInterval, [&] { return finished == n; });
      const uint64_t now = done.load(std::memory_order_relaxed);
      if (on_progress && now != reported) {
        lock.unlock();  // a slow sink must not hold up the workers' exit
        on_progress(now);
        lock.lock();
        reported = now;
      }
      if (all) break;
    }
  }
  workers.clear();  // joins
  prefetch = {};    // stops and joins
}

}  // namespace

void read_extent_sums(const ScanResult& scan, std::vector<ExtentSums>& extents,
                      const std::vector<size_t>& to_read, unsigned threads,
                      const std::function<void(uint64_t bytes_done)>& on_progress,
                      FingerprintStats& stats) {
  if (to_read.empty()) return;
  const uint32_t ss = scan.fs.sectorsize;
  const SectorChecksum algo(scan.fs.csum_type);
  const auto batches = make_batches(extents, to_read, ss);
  const unsigned n = static_cast<unsigned>(
      std::clamp<size_t>(threads, 1, batches.size()));
  std::vector<ExtentReader> readers;
  readers.reserve(n);
  for (unsigned i = 0; i < n; ++i) readers.emplace_back(scan, algo);
  // One worker for many batches still gets the prefetch.
  if (batches.size() == 1)
    read_in_this_thread(readers[0], extents, to_read, ss, on_progress);
  else
    read_in_workers(scan, extents, to_read, batches, readers, on_progress);
  merge(readers, stats);
}

}  // namespace btrdedupe
