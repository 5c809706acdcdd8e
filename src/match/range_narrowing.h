// Sums propose, the kernel decides: when FIDEDUPERANGE finds a proposed range not equal
// although neither file changed since the scan (the sums that agreed were a collision, or
// did not describe every byte), the range is not dropped but narrowed: split in halves,
// each tried again, down to single sectors, so the equal parts are still shared and only
// the sectors that differ stay as they were.
#pragma once

#include <cstdint>
#include <functional>

#include "btrfs/dedupe_range.h"
#include "btrfs/result.h"

namespace btrdedupe {

// Tries to share [offset, offset + length) of the source at the same place of the
// destination (offsets relative to the proposed range's start). Returns the kernel's
// outcome for that one destination.
using ShareRange = std::function<btrfs::Result<btrfs::DedupeOutcome>(uint64_t offset,
                                                                      uint64_t length)>;

struct NarrowedRange {
  uint64_t bytes_shared = 0;
  uint64_t bytes_unequal = 0;  // in sectors the kernel found different
  uint64_t calls = 0;
  bool gave_up = false;        // the call budget ran out, or the kernel refused a piece
};

// Narrows a range of `length` bytes that came back DIFFERS as a whole: bisects it on
// `sector` boundaries (the tail keeps its original end, so an unaligned EOF stays legal),
// at most `max_calls` kernel calls.
NarrowedRange narrow_unequal_range(uint64_t length, uint64_t sector, unsigned max_calls,
                                   const ShareRange& share);

}  // namespace btrdedupe
