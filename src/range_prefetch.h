// Bringing a file range into the page cache the way DedupeOptions::prefetch says. Apart from
// the dedupe run because it is the one place the run touches file data itself, and the
// choice between its ways is measured on its own (docs/benchmarks-history.md).
#pragma once

#include <cstdint>
#include <vector>

#include "src/dedupe_engine.h"

namespace btrdedupe {

// Sequential reads put the range in the page cache just before the kernel compares it.
// Returns the bytes read or asked for; `buf` is the scratch buffer of Prefetch::Read.
uint64_t prefetch_range(Prefetch how, int fd, uint64_t offset, uint64_t length,
                        std::vector<uint8_t>& buf);

}  // namespace btrdedupe
