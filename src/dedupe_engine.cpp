#include "src/dedupe_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "btrfs/dedupe_range.h"
#include "src/scanned_file.h"

namespace btrdedupe {
namespace {

constexpr size_t kMaxMessages = 20;
constexpr size_t kPrefetchChunk = 1 << 20;

struct PendingRetry {
  size_t round;
  size_t destination;
};

class DedupeRun {
 public:
  DedupeRun(const ScanResult& scan, const DedupePlan& plan, const DedupeOptions& options)
      : scan_(scan), plan_(plan), options_(options) {}

  DedupeStats run() {
    const unsigned n = std::max(1u, options_.io_threads);
    std::vector<std::thread> workers;
    for (unsigned i = 0; i < n; ++i) workers.emplace_back([this] { work(); });
    for (auto& t : workers) t.join();
    if (no_space_) {
      stats_.ranges_not_tried += retries_.size();
      retries_.clear();
    }
    retry_eagain();
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
  void work() {
    std::vector<uint8_t> buf(kPrefetchChunk);
    const bool last_attempt = options_.eagain_retries == 0;
    for (size_t r; (r = next_.fetch_add(1)) < plan_.rounds.size() && !stopping();)
      do_round(r, std::nullopt, last_attempt, buf);
  }

  bool stopping() {
    if (!options_.stop || !options_.stop->load()) return false;
    std::lock_guard lock(mu_);
    stats_.stopped = true;
    return true;
  }

  // Runs round r for all destinations, or only `only` when set (a retry).
  void do_round(size_t r, std::optional<size_t> only, bool last_attempt, std::vector<uint8_t>& buf) {
    const DedupeRound& round = plan_.rounds[r];
    if (no_space_) {
      std::lock_guard lock(mu_);
      stats_.ranges_not_tried += only ? 1 : round.destinations.size();
      return;
    }
    const ScannedFile& src_file = scan_.files[round.source.file];
    auto src = open_scanned_file(scan_, src_file, true);
    if (!src) {
      std::lock_guard lock(mu_);
      const size_t n = only ? 1 : round.destinations.size();
      stats_.ranges_changed += n;
      message_locked("source " + src.error().message() + ": " + std::to_string(n) +
                     " range(s) skipped");
      return;
    }
    std::vector<btrfs::Fd> fds;
    std::vector<size_t> which;  // destination index in the round for each open fd
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
      fds.push_back(std::move(*fd));
      which.push_back(d);
    }
    if (fds.empty()) return;
    if (options_.prefetch != Prefetch::None) {
      uint64_t warmed = prefetch(src->get(), round.source.offset, round.length, buf);
      for (size_t i = 0; i < fds.size(); ++i)
        warmed += prefetch(fds[i].get(), round.destinations[which[i]].offset, round.length, buf);
      std::lock_guard lock(mu_);
      stats_.bytes_prefetched += warmed;
    }
    std::vector<uint64_t> done(fds.size(), 0);
    std::vector<bool> active(fds.size(), true);
    auto call = [&](const std::vector<size_t>& idx, uint64_t at) {
      std::vector<btrfs::DedupeDestination> dests;
      for (size_t i : idx) dests.push_back({fds[i].get(), round.destinations[which[i]].offset + at});
      auto result =
          btrfs::dedupe_range(src->get(), round.source.offset + at, round.length - at, dests);
      std::lock_guard lock(mu_);
      if (!result) {
        if (result.error().code == ENOSPC) no_space_ = true;
        for (size_t i : idx) active[i] = false;
        stats_.ranges_failed += idx.size();
        stats_.errors_by_code[result.error().code] += idx.size();
        message_locked(file_path(scan_, src_file) + ": " + result.error().message());
        return;
      }
      if (result->issued_length > 0) ++stats_.calls;
      for (size_t k = 0; k < idx.size(); ++k)
        record(round, which[idx[k]], result->outcomes[k], last_attempt, r, done[idx[k]],
               active[idx[k]]);
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
    const std::string src_path = file_path(scan_, scan_.files[round.source.file]);
    const std::string dpath = file_path(scan_, scan_.files[round.destinations[d].file]);
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
        ++stats_.ranges_differ;
        message_locked(dpath + ": content differs from " + src_path +
                       " (changed since the scan): left as it was");
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
        message_locked(dpath + ": " + dedupe_error_reason(o.error) + " (" +
                       std::strerror(o.error) + "): skipped");
        break;
      case btrfs::DedupeStatus::Skipped:
        active = false;
        break;
    }
  }

  // Sequential reads put the range in the page cache just before the kernel compares it.
  uint64_t prefetch(int fd, uint64_t offset, uint64_t length, std::vector<uint8_t>& buf) const {
    switch (options_.prefetch) {
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
      for (const auto& p : pending) do_round(p.round, p.destination, last, buf);
    }
  }

  void message_locked(std::string m) {
    if (stats_.messages.size() < kMaxMessages) stats_.messages.push_back(std::move(m));
  }

  const ScanResult& scan_;
  const DedupePlan& plan_;
  const DedupeOptions& options_;
  std::atomic<size_t> next_{0};
  std::mutex mu_;
  DedupeStats stats_;
  std::vector<PendingRetry> retries_;
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

}  // namespace btrdedupe
