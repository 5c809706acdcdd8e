// The second tries of a dedupe run, after its pool: ranges the kernel refused with EAGAIN
// (a send was running) and ranges it found unequal, narrowed to their equal parts. Apart
// from the pool because they run on the calling thread once the workers are done.
#include "src/dedupe/dedupe_run.h"

#include <sys/stat.h>

#include <chrono>
#include <thread>
#include <utility>

#include "src/match/range_narrowing.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// Kernel calls spent narrowing one unequal range: enough to isolate ~4 differing sectors
// of a 16 MiB round (a bisection takes ~2 log2(4096) calls per sector).
constexpr unsigned kMaxNarrowingCalls = 96;

}  // namespace

void DedupeRun::retry_eagain() {
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

void DedupeRun::narrow_unequal() {
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

bool DedupeRun::written_since_scan(int fd) const {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return true;
  const auto& t = options_.scan_started;
  return std::make_pair(static_cast<int64_t>(st.st_ctim.tv_sec), static_cast<int64_t>(st.st_ctim.tv_nsec)) >=
         std::make_pair(t.sec, static_cast<int64_t>(t.nsec));
}

}  // namespace btrdedupe
