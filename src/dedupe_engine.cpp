#include "src/dedupe_engine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "btrfs/dedupe_range.h"
#include "src/dedupe_kernel.h"
#include "src/range_narrowing.h"
#include "src/scanned_file.h"

namespace btrdedupe {
namespace {

constexpr size_t kMaxMessages = 20;
constexpr size_t kPrefetchChunk = 1 << 20;
// Rounds this long or longer are read by their worker (pread) even when the others are
// fadvised ahead: on the images case (16 MiB rounds of 1 MiB extents) fadvise took 3.7 s
// where reading in the worker took 1.3 s, while on dataset P (a round per small file) the
// asynchronous fadvise ahead is the faster (9.1 s against 11.6 s).
constexpr uint64_t kReadInWorkerBytes = 1 << 20;
// Open files held by prefetched rounds waiting in the queue: well under the usual 1024 limit.
constexpr size_t kMaxQueuedFds = 256;
// Kernel calls spent narrowing one unequal range: enough to isolate ~4 differing sectors
// of a 16 MiB round (a bisection takes ~2 log2(4096) calls per sector).
constexpr unsigned kMaxNarrowingCalls = 96;

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
};

class DedupeRun {
 public:
  DedupeRun(const ScanResult& scan, const DedupePlan& plan, const DedupeOptions& options)
      : scan_(scan),
        plan_(plan),
        options_(options),
        kernel_(options.kernel ? *options.kernel : fideduperange()),
        started_(plan.rounds.size(), 0) {}

  DedupeStats run() {
    const unsigned n = std::max(1u, options_.io_threads);
    std::vector<std::thread> workers;
    std::thread producer([this] { produce(); });
    for (unsigned i = 0; i < n; ++i) workers.emplace_back([this] { work(); });
    producer.join();
    for (auto& t : workers) t.join();
    if (no_space_) {
      stats_.ranges_not_tried += retries_.size();
      retries_.clear();
    }
    retry_eagain();
    narrow_unequal();
    if (stats_.stopped)
      for (size_t r = 0; r < plan_.rounds.size(); ++r)
        if (!started_[r]) {
          ++stats_.rounds_not_started;
          stats_.bytes_not_started += plan_.rounds[r].length * plan_.rounds[r].destinations.size();
        }
    if (options_.round_started) *options_.round_started = std::move(started_);
    if (no_space_) {
      stats_.no_space = true;
      stats_.messages.insert(
          stats_.messages.begin(),
          "the filesystem is full (ENOSPC): no dedupe round was started after the first "
          "refusal; " + std::to_string(stats_.ranges_not_tried) +
              " range(s) not tried (free some space and run again)");
    }
    return stats_;
  }

 private:
  // Asynchronous prefetch (fadvise, readahead) is issued here, ahead of the workers, so the
  // device reads the next rounds while the CPUs compare the current ones. A synchronous
  // read would serialise the pool behind this thread: that mode reads in the worker.
  bool prefetch_ahead() const {
    return options_.prefetch == Prefetch::Fadvise || options_.prefetch == Prefetch::Readahead;
  }
  bool read_in_worker(size_t r) const {
    return options_.prefetch == Prefetch::Fadvise && plan_.rounds[r].length >= kReadInWorkerBytes;
  }

  // Opens and prefetches rounds in plan (physical) order into a queue bounded by bytes
  // and open files, so memory and page cache use stay flat whatever the plan's size.
  void produce() {
    std::vector<uint8_t> no_buffer;
    for (size_t r = 0; r < plan_.rounds.size() && !stopping() && !no_space_; ++r) {
      produced_ = r + 1;
      auto prepared = prepare(r, std::nullopt, prefetch_ahead() && !read_in_worker(r), no_buffer);
      if (!prepared) {
        started_[r] = 1;  // its files were looked at (changed, gone): not left for later
        continue;
      }
      std::unique_lock lock(queue_mu_);
      queue_space_.wait(lock, [&] {
        return queue_.empty() ||
               (queued_bytes_ + prepared->window_bytes <= options_.prefetch_window &&
                queued_fds_ + prepared->fds.size() + 1 <= kMaxQueuedFds);
      });
      queued_bytes_ += prepared->window_bytes;
      queued_fds_ += prepared->fds.size() + 1;
      queue_.push_back(std::move(*prepared));
      queue_ready_.notify_one();
    }
    if (no_space_) {  // the rounds never produced are not tried either
      std::lock_guard lock(mu_);
      for (size_t r = produced_; r < plan_.rounds.size(); ++r)
        stats_.ranges_not_tried += plan_.rounds[r].destinations.size();
    }
    std::lock_guard lock(queue_mu_);
    produced_all_ = true;
    queue_ready_.notify_all();
  }

  std::optional<PreparedRound> pop() {
    std::unique_lock lock(queue_mu_);
    queue_ready_.wait(lock, [&] { return !queue_.empty() || produced_all_; });
    if (queue_.empty()) return std::nullopt;
    PreparedRound p = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= p.window_bytes;
    queued_fds_ -= p.fds.size() + 1;
    queue_space_.notify_one();
    return p;
  }

  void work() {
    std::vector<uint8_t> buf(kPrefetchChunk);
    const bool last_attempt = options_.eagain_retries == 0;
    while (auto p = pop()) {
      if (stopping()) continue;  // drain the queue: its files close, no call is made
      if (no_space_) {
        std::lock_guard lock(mu_);
        stats_.ranges_not_tried += p->fds.size();
        continue;
      }
      if (read_in_worker(p->index))
        warm(*p, buf, Prefetch::Read);
      else if (!prefetch_ahead())
        warm(*p, buf, options_.prefetch);
      started_[p->index] = 1;  // one worker per round: no two write one element
      execute(*p, last_attempt);
    }
  }

  bool stopping() {
    if (!options_.stop || !options_.stop->load()) return false;
    std::lock_guard lock(mu_);
    stats_.stopped = true;
    return true;
  }

  // Opens round r's files, all destinations or only `only` (a retry), proving each is the
  // file scanned; with `warm_now`, asks its ranges into the page cache.
  std::optional<PreparedRound> prepare(size_t r, std::optional<size_t> only, bool warm_now,
                                       std::vector<uint8_t>& buf) {
    const DedupeRound& round = plan_.rounds[r];
    if (no_space_) {
      std::lock_guard lock(mu_);
      stats_.ranges_not_tried += only ? 1 : round.destinations.size();
      return std::nullopt;
    }
    const ScannedFile& src_file = scan_.files[round.source.file];
    auto src = open_scanned_file(scan_, src_file, true);
    if (!src) {
      std::lock_guard lock(mu_);
      const size_t n = only ? 1 : round.destinations.size();
      stats_.ranges_changed += n;
      message_locked("source " + src.error().message() + ": " + std::to_string(n) +
                     " range(s) skipped");
      return std::nullopt;
    }
    PreparedRound p;
    p.index = r;
    p.only = only;
    p.source = std::move(*src);
    for (size_t d = 0; d < round.destinations.size(); ++d) {
      if (only && d != *only) continue;
      const ScannedFile& f = scan_.files[round.destinations[d].file];
      auto fd = open_scanned_file(scan_, f, true);
      if (!fd) {
        std::lock_guard lock(mu_);
        ++stats_.ranges_changed;
        message_locked(fd.error().message() + ": skipped");
        continue;
      }
      p.fds.push_back(std::move(*fd));
      p.which.push_back(d);
    }
    if (p.fds.empty()) return std::nullopt;
    p.window_bytes = round.length * (p.fds.size() + 1);
    if (warm_now) warm(p, buf, options_.prefetch);
    return p;
  }

  void warm(const PreparedRound& p, std::vector<uint8_t>& buf, Prefetch how) {
    if (how == Prefetch::None) return;
    const DedupeRound& round = plan_.rounds[p.index];
    uint64_t warmed = prefetch(how, p.source.get(), round.source.offset, round.length, buf);
    for (size_t i = 0; i < p.fds.size(); ++i)
      warmed += prefetch(how, p.fds[i].get(), round.destinations[p.which[i]].offset,
                         round.length, buf);
    std::lock_guard lock(mu_);
    stats_.bytes_prefetched += warmed;
  }

  // Makes the calls of a prepared round.
  void execute(PreparedRound& p, bool last_attempt) {
    const size_t r = p.index;
    const DedupeRound& round = plan_.rounds[r];
    auto& fds = p.fds;
    const auto& which = p.which;
    std::vector<uint64_t> done(fds.size(), 0);
    std::vector<bool> active(fds.size(), true);
    auto call = [&](const std::vector<size_t>& idx, uint64_t at) {
      std::vector<btrfs::DedupeDestination> dests;
      for (size_t i : idx) dests.push_back({fds[i].get(), round.destinations[which[i]].offset + at});
      auto result =
          kernel_.dedupe_range(p.source.get(), round.source.offset + at, round.length - at, dests);
      // The files were opened (and proven unchanged) a prefetch window ago: a refusal from
      // a file written since is a change, not a failure.
      const bool source_changed =
          !result && changed_since_scan(p.source.get(), scan_.files[round.source.file]);
      std::vector<bool> dest_changed(idx.size(), false);
      if (result)
        for (size_t k = 0; k < idx.size(); ++k)
          dest_changed[k] = result->outcomes[k].status == btrfs::DedupeStatus::Error &&
                            changed_since_scan(fds[idx[k]].get(),
                                               scan_.files[round.destinations[which[idx[k]]].file]);
      std::lock_guard lock(mu_);
      if (!result && source_changed) {
        for (size_t i : idx) active[i] = false;
        stats_.ranges_changed += idx.size();
        message_locked(file_path(scan_, scan_.files[round.source.file]) +
                       ": changed since the scan: " + std::to_string(idx.size()) +
                       " range(s) skipped");
        return;
      }
      if (!result) {
        if (result.error().code == ENOSPC) no_space_ = true;
        for (size_t i : idx) active[i] = false;
        stats_.ranges_failed += idx.size();
        stats_.errors_by_code[result.error().code] += idx.size();
        message_locked(file_path(scan_, scan_.files[round.source.file]) + ": " +
                       result.error().message());
        return;
      }
      if (result->issued_length > 0) ++stats_.calls;
      for (size_t k = 0; k < idx.size(); ++k) {
        if (dest_changed[k]) {
          active[idx[k]] = false;
          ++stats_.ranges_changed;
          message_locked(file_path(scan_, scan_.files[round.destinations[which[idx[k]]].file]) +
                         ": changed since the scan: skipped");
          continue;
        }
        record(round, which[idx[k]], result->outcomes[k], last_attempt, r, done[idx[k]],
               active[idx[k]]);
      }
    };
    // All destinations go in one call; one that comes back short continues alone. A call
    // without progress takes its destination out: no round loops without progress.
    std::vector<size_t> all(fds.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    call(all, 0);
    for (size_t i = 0; i < fds.size(); ++i)
      while (active[i] && done[i] < round.length) call({i}, done[i]);
    if (options_.on_progress) {
      std::lock_guard lock(mu_);
      options_.on_progress(stats_.bytes_deduped);
    }
  }

  // Books one destination's outcome (mu_ held).
  void record(const DedupeRound& round, size_t d, const btrfs::DedupeOutcome& o, bool last_attempt,
              size_t r, uint64_t& done, std::vector<bool>::reference active) {
    // Paths are built only for messages: most outcomes are Same.
    auto dpath = [&] { return file_path(scan_, scan_.files[round.destinations[d].file]); };
    switch (o.status) {
      case btrfs::DedupeStatus::Same:
        stats_.bytes_deduped += o.bytes_deduped;
        if (o.bytes_deduped)
          stats_.bytes_by_subvolume[scan_.files[round.destinations[d].file].subvolume] +=
              o.bytes_deduped;
        done += o.bytes_deduped;
        if (o.bytes_deduped == 0) active = false;
        if (done >= round.length) ++stats_.ranges_same;
        break;
      case btrfs::DedupeStatus::Differs:
        active = false;
        unequal_.push_back({r, d, done});  // changed since the scan, or narrowed later
        break;
      case btrfs::DedupeStatus::Error:
        active = false;
        if (o.error == EAGAIN && !last_attempt) {
          retries_.push_back({r, d});
          ++stats_.ranges_retried;
          break;
        }
        if (o.error == ENOSPC) no_space_ = true;
        ++stats_.ranges_failed;
        ++stats_.errors_by_code[o.error];
        message_locked(dpath() + ": " + dedupe_error_reason(o.error) + " (" +
                       std::strerror(o.error) + "): skipped");
        break;
      case btrfs::DedupeStatus::Skipped:
        active = false;
        break;
    }
  }

  // Sequential reads put the range in the page cache just before the kernel compares it.
  static uint64_t prefetch(Prefetch how, int fd, uint64_t offset, uint64_t length,
                           std::vector<uint8_t>& buf) {
    switch (how) {
      case Prefetch::None:
        return 0;
      case Prefetch::Readahead:
        return ::readahead(fd, static_cast<off64_t>(offset), length) == 0 ? length : 0;
      case Prefetch::Fadvise:
        return ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length),
                               POSIX_FADV_WILLNEED) == 0
                   ? length
                   : 0;
      case Prefetch::Read:
        break;
    }
    uint64_t got = 0;
    while (got < length) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - got));
      const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<uint64_t>(n);
    }
    return got;
  }


  void retry_eagain() {
    std::vector<uint8_t> buf(kPrefetchChunk);
    for (unsigned attempt = 0;
         attempt < options_.eagain_retries && !retries_.empty() && !stopping(); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.eagain_wait_ms));
      auto pending = std::move(retries_);
      retries_.clear();
      const bool last = attempt + 1 == options_.eagain_retries;
      for (const auto& p : pending)
        if (auto prepared = prepare(p.round, p.destination, true, buf)) execute(*prepared, last);
    }
  }

  // Ranges the kernel found not equal: a file written since the scan is a change; two
  // unchanged files mean the sums proposed more than is equal, and the range is narrowed
  // to its equal parts (src/range_narrowing.h). After the pool: no lock is needed.
  void narrow_unequal() {
    for (const auto& u : unequal_) {
      if (stopping()) break;
      const DedupeRound& round = plan_.rounds[u.round];
      const RangeRef& dst = round.destinations[u.destination];
      auto src_fd = open_scanned_file(scan_, scan_.files[round.source.file], true);
      auto dst_fd = open_scanned_file(scan_, scan_.files[dst.file], true);
      if (!src_fd || !dst_fd || written_since_scan(src_fd->get()) ||
          written_since_scan(dst_fd->get())) {
        ++stats_.ranges_differ;
        message_locked(file_path(scan_, scan_.files[dst.file]) + ": content differs from " +
                       file_path(scan_, scan_.files[round.source.file]) +
                       " (changed since the scan): left as it was");
        continue;
      }
      ++stats_.ranges_unequal;
      const uint64_t src_at = round.source.offset + u.done, dst_at = dst.offset + u.done;
      const auto n = narrow_unequal_range(
          round.length - u.done, scan_.fs.sectorsize, kMaxNarrowingCalls,
          [&](uint64_t offset, uint64_t length) -> btrfs::Result<btrfs::DedupeOutcome> {
            const btrfs::DedupeDestination to{dst_fd->get(), dst_at + offset};
            auto call = kernel_.dedupe_range(src_fd->get(), src_at + offset, length, {&to, 1});
            if (!call) return call.error();
            return call->outcomes.front();
          });
      stats_.calls += n.calls;
      stats_.bytes_deduped += n.bytes_shared;
      stats_.bytes_narrowed += n.bytes_shared;
      if (n.bytes_shared) stats_.bytes_by_subvolume[scan_.files[dst.file].subvolume] += n.bytes_shared;
    }
    unequal_.clear();
  }

  bool written_since_scan(int fd) const {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return true;
    const auto& t = options_.scan_started;
    return std::make_pair(static_cast<int64_t>(st.st_ctim.tv_sec), static_cast<int64_t>(st.st_ctim.tv_nsec)) >=
           std::make_pair(t.sec, static_cast<int64_t>(t.nsec));
  }

    void message_locked(std::string m) {
    if (stats_.messages.size() < kMaxMessages) stats_.messages.push_back(std::move(m));
  }

  const ScanResult& scan_;
  const DedupePlan& plan_;
  const DedupeOptions& options_;
  DedupeKernel& kernel_;
  std::vector<uint8_t> started_;  // by round: its call was made (or its files were found changed)
  std::mutex mu_;
  std::mutex queue_mu_;
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

}  // namespace

std::string dedupe_error_reason(int code) {
  switch (code) {
    case EINVAL: return "the kernel refused the range (unaligned, or a nodatacow/COW pair)";
    case EPERM: return "not permitted (immutable or append-only file?)";
    case EROFS: return "read-only filesystem";
    case ETXTBSY: return "active swapfile";
    case EAGAIN: return "a send is running on its subvolume";
    case EXDEV: return "on another filesystem";
    case ENOSPC: return "no space left to write the new extent references";
    default: return "dedupe failed";
  }
}

DedupeStats run_dedupe(const ScanResult& scan, const DedupePlan& plan, const DedupeOptions& options) {
  return DedupeRun(scan, plan, options).run();
}

void DedupeStats::add(const DedupeStats& more) {
  calls += more.calls;
  bytes_deduped += more.bytes_deduped;
  for (const auto& [id, bytes] : more.bytes_by_subvolume) bytes_by_subvolume[id] += bytes;
  ranges_same += more.ranges_same;
  ranges_differ += more.ranges_differ;
  ranges_changed += more.ranges_changed;
  ranges_failed += more.ranges_failed;
  ranges_retried += more.ranges_retried;
  bytes_prefetched += more.bytes_prefetched;
  for (const auto& [code, ranges] : more.errors_by_code) errors_by_code[code] += ranges;
  for (const auto& m : more.messages)  // the first few over the whole run
    if (messages.size() < kMaxMessages) messages.push_back(m);
  stopped = stopped || more.stopped;
  no_space = no_space || more.no_space;
  ranges_not_tried += more.ranges_not_tried;
  ranges_unequal += more.ranges_unequal;
  bytes_narrowed += more.bytes_narrowed;
  rounds_not_started += more.rounds_not_started;
  bytes_not_started += more.bytes_not_started;
}

}  // namespace btrdedupe
