// The pool of one dedupe run (declared in src/dedupe/dedupe_run.h): a producer opening and
// prefetching rounds ahead, workers making their calls and booking the outcomes. Apart
// from the second tries (src/dedupe/dedupe_retries.cpp): this is what runs on several threads.
#include "src/dedupe/dedupe_run.h"

#include <cstring>
#include <thread>

#include "src/dedupe/range_prefetch.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// Rounds this long or longer are read by their worker (pread) even when the others are
// fadvised ahead: on the images case (16 MiB rounds of 1 MiB extents) fadvise took 3.7 s
// where reading in the worker took 1.3 s, while on dataset P (a round per small file) the
// asynchronous fadvise ahead is the faster (9.1 s against 11.6 s).
constexpr uint64_t kReadInWorkerBytes = 1 << 20;
// Open files held by prefetched rounds waiting in the queue: well under the usual 1024 limit.
constexpr size_t kMaxQueuedFds = 256;

}  // namespace

DedupeStats DedupeRun::run() {
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

bool DedupeRun::prefetch_ahead() const {
  return options_.prefetch == Prefetch::Fadvise || options_.prefetch == Prefetch::Readahead;
}

bool DedupeRun::read_in_worker(size_t r) const {
  return options_.prefetch == Prefetch::Fadvise && plan_.rounds[r].length >= kReadInWorkerBytes;
}

void DedupeRun::produce() {
  std::vector<uint8_t> no_buffer;
  for (size_t r = 0; r < plan_.rounds.size() && !stopping() && !no_space_; ++r) {
    if (options_.pace) {
      const DedupeRound& round = plan_.rounds[r];
      options_.pace->before_round(round.length * (1 + round.destinations.size()));
      if (stopping()) break;
    }
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

std::optional<PreparedRound> DedupeRun::pop() {
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

void DedupeRun::work() {
  std::vector<uint8_t> buf(kPrefetchChunk);
  const bool last_attempt = options_.eagain_retries == 0;
  while (auto p = pop()) {
    if (stopping()) {  // drain the queue: its files close, no call is made
      release(*p);
      continue;
    }
    if (no_space_) {
      release(*p);
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

bool DedupeRun::stopping() {
  if (!options_.stop || !options_.stop->load()) return false;
  std::lock_guard lock(mu_);
  stats_.stopped = true;
  return true;
}

std::optional<PreparedRound> DedupeRun::prepare(size_t r, std::optional<size_t> only,
                                                bool warm_now, std::vector<uint8_t>& buf) {
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
  p.release_source = hold_range(round.source.file, p.source.get(), round.source.offset,
                                round.length);
  for (size_t i = 0; i < p.fds.size(); ++i) {
    const RangeRef& d = round.destinations[p.which[i]];
    p.release.push_back(hold_range(d.file, p.fds[i].get(), d.offset, round.length));
  }
  if (warm_now) warm(p, buf, options_.prefetch);
  return p;
}

bool DedupeRun::hold_range(uint32_t file, int fd, uint64_t offset, uint64_t length) {
  std::lock_guard lock(held_mu_);
  if (auto it = held_ranges_.find({file, offset}); it != held_ranges_.end()) {
    ++it->second;
    return true;
  }
  // A kernel that cannot tell what was cached: the run's ranges are dropped all the same.
  if (range_cached(fd, offset, length).value_or(false)) return false;
  held_ranges_.emplace(std::pair{file, offset}, 1);
  return true;
}

void DedupeRun::drop_range(uint32_t file, int fd, uint64_t offset, uint64_t length) {
  std::lock_guard lock(held_mu_);  // held while dropping: no round judges the range meanwhile
  const auto it = held_ranges_.find({file, offset});
  if (it == held_ranges_.end() || --it->second > 0) return;
  held_ranges_.erase(it);
  release_range(fd, offset, length);
}

void DedupeRun::release(const PreparedRound& p) {
  const DedupeRound& round = plan_.rounds[p.index];
  if (p.release_source)
    drop_range(round.source.file, p.source.get(), round.source.offset, round.length);
  for (size_t i = 0; i < p.fds.size(); ++i)
    if (p.release[i]) {
      const RangeRef& d = round.destinations[p.which[i]];
      drop_range(d.file, p.fds[i].get(), d.offset, round.length);
    }
}

void DedupeRun::warm(const PreparedRound& p, std::vector<uint8_t>& buf, Prefetch how) {
  if (how == Prefetch::None) return;
  const DedupeRound& round = plan_.rounds[p.index];
  uint64_t warmed = prefetch_range(how, p.source.get(), round.source.offset, round.length, buf);
  for (size_t i = 0; i < p.fds.size(); ++i)
    warmed += prefetch_range(how, p.fds[i].get(), round.destinations[p.which[i]].offset,
                             round.length, buf);
  std::lock_guard lock(mu_);
  stats_.bytes_prefetched += warmed;
}

void DedupeRun::execute(PreparedRound& p, bool last_attempt) {
  const DedupeRound& round = plan_.rounds[p.index];
  RoundProgress progress{std::vector<uint64_t>(p.fds.size(), 0),
                         std::vector<bool>(p.fds.size(), true)};
  // All destinations go in one call; one that comes back short continues alone. A call
  // without progress takes its destination out: no round loops without progress.
  std::vector<size_t> all(p.fds.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  make_call(p, all, 0, last_attempt, progress);
  for (size_t i = 0; i < p.fds.size(); ++i)
    while (progress.active[i] && progress.done[i] < round.length)
      make_call(p, {i}, progress.done[i], last_attempt, progress);
  release(p);
  if (options_.on_progress) {
    std::lock_guard lock(mu_);
    options_.on_progress(stats_.bytes_deduped);
  }
}

void DedupeRun::make_call(const PreparedRound& p, const std::vector<size_t>& idx, uint64_t at,
                          bool last_attempt, RoundProgress& progress) {
  const DedupeRound& round = plan_.rounds[p.index];
  const auto& which = p.which;
  std::vector<btrfs::DedupeDestination> dests;
  for (size_t i : idx) dests.push_back({p.fds[i].get(), round.destinations[which[i]].offset + at});
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
                        changed_since_scan(p.fds[idx[k]].get(),
                                           scan_.files[round.destinations[which[idx[k]]].file]);
  std::lock_guard lock(mu_);
  if (!result) {
    book_refused_call(round, idx, result.error(), source_changed, progress);
    return;
  }
  if (result->issued_length > 0) ++stats_.calls;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (dest_changed[k]) {
      progress.active[idx[k]] = false;
      ++stats_.ranges_changed;
      message_locked(file_path(scan_, scan_.files[round.destinations[which[idx[k]]].file]) +
                     ": changed since the scan: skipped");
      continue;
    }
    record(round, which[idx[k]], result->outcomes[k], last_attempt, p.index,
           progress.done[idx[k]], progress.active[idx[k]]);
  }
}

void DedupeRun::book_refused_call(const DedupeRound& round, const std::vector<size_t>& idx,
                                  const btrfs::Error& error, bool source_changed,
                                  RoundProgress& progress) {
  for (size_t i : idx) progress.active[i] = false;
  const std::string source = file_path(scan_, scan_.files[round.source.file]);
  if (source_changed) {
    stats_.ranges_changed += idx.size();
    message_locked(source + ": changed since the scan: " + std::to_string(idx.size()) +
                   " range(s) skipped");
    return;
  }
  if (error.code == ENOSPC) no_space_ = true;
  stats_.ranges_failed += idx.size();
  stats_.errors_by_code[error.code] += idx.size();
  message_locked(source + ": " + error.message());
}

void DedupeRun::record(const DedupeRound& round, size_t d, const btrfs::DedupeOutcome& o,
                       bool last_attempt, size_t r, uint64_t& done,
                       std::vector<bool>::reference active) {
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

void DedupeRun::message_locked(std::string m) {
  if (stats_.messages.size() < kMaxMessages) stats_.messages.push_back(std::move(m));
}

}  // namespace btrdedupe
