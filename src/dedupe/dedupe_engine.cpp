#include "src/dedupe/dedupe_engine.h"

#include <cerrno>

#include "src/dedupe/dedupe_run.h"

namespace btrdedupe {

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
