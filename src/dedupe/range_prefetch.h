// Bringing a file range into the page cache the way DedupeOptions::prefetch says. Apart from
// the dedupe run because it is the one place the run touches file data itself, and the
// choice between its ways is measured on its own (docs/benchmarks-history.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "src/dedupe/dedupe_engine.h"

namespace btrdedupe {

// Sequential reads put the range in the page cache just before the kernel compares it.
// Returns the bytes read or asked for; `buf` is the scratch buffer of Prefetch::Read.
uint64_t prefetch_range(Prefetch how, int fd, uint64_t offset, uint64_t length,
                        std::vector<uint8_t>& buf);

// Whether any page of the range is in the page cache now (cachestat(2)); nullopt when the
// kernel cannot tell (before Linux 6.5) or the call fails.
std::optional<bool> range_cached(int fd, uint64_t offset, uint64_t length);

// Drops the range's clean pages from the page cache (POSIX_FADV_DONTNEED): the data stays
// on disk untouched, a later read brings it back.
void release_range(int fd, uint64_t offset, uint64_t length);

}  // namespace btrdedupe
