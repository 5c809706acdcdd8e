// Reading the data of physical extents that the csum tree cannot fingerprint (compressed
// extents, nodatasum files) and summing it with the filesystem's own algorithm.
//
// The extents to read are given in disk order. They are cut into batches of consecutive
// extents (about 2 MiB of data each) that `threads` workers take in turn from a shared
// cursor, so each worker reads forward on disk and together they keep several requests in
// flight. A worker keeps the file it reads open from one extent to the next, with
// sequential readahead, so the kernel issues large requests ahead of the 128 KiB reads of
// compressed extents, and a prefetch (src/fingerprint/extent_prefetch.h) asks the next
// batches into the page cache while they read. Pages are left in the cache: the dedupe
// that follows compares the same bytes.
//
// Results do not depend on the thread count: an extent is read by exactly one worker, in
// the same way whichever it is, and the statistics and the first errors are merged in
// disk order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "src/fingerprint/extent_sums.h"
#include "src/fingerprint/fingerprint.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// Reads and sums the sectors of extents[to_read[i]] that a reference covers and no sum is
// known for. on_progress, when set, is called from the calling thread only, with the bytes
// (ExtentSums::sectors * sectorsize) of the extents finished so far. Counts reads, bytes
// and errors into `stats` (extents_read, bytes_read, read_errors, errors).
void read_extent_sums(const ScanResult& scan, std::vector<ExtentSums>& extents,
                      const std::vector<size_t>& to_read, unsigned threads,
                      const std::function<void(uint64_t bytes_done)>& on_progress,
                      FingerprintStats& stats);

}  // namespace btrdedupe
