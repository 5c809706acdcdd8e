// Content-defined anchors over a file's sequence of sector sums, for alignment-free
// partial matching (src/match/run_match.h).
//
// An anchor is a k-gram: k consecutive sector sums, hashed. k is chosen so that an anchor
// rests on at least 64 bits of sums (2 sectors for crc32c, 1 for the 8- and 32-byte sums):
// less is not evidence of equal content. Anchors are selected by winnowing: in every
// window of w consecutive k-grams the one with the smallest hash (the rightmost on ties).
// So two files sharing a run of at least w + k - 1 equal sectors select a k-gram of the
// same hash inside it, wherever the run lies in either file, and about 2/(w+1) of the
// positions are selected (random content; a constant run, such as written zeros, selects
// every position, all of one hash).
#pragma once

#include <cstdint>
#include <functional>

#include "src/fingerprint/fingerprint.h"

namespace btrdedupe {

struct AnchorShape {
  uint32_t k = 2;            // sectors per k-gram
  uint32_t w = 31;           // k-grams per winnowing window
  uint64_t min_sectors = 32; // w + k - 1: every equal run this long holds a shared anchor
};

// The shape for runs of at least min_run_bytes (a sector multiple) over sums of csum_size
// bytes: k = ceil(8 / csum_size); the minimum run is never below k sectors.
AnchorShape anchor_shape(uint64_t min_run_bytes, uint32_t sectorsize, uint16_t csum_size);

// What a k-gram may not hold: an unknown sector (hole, prealloc, unreadable) or, when
// `residue_breaks`, a crc32c residue sum (sector_checksum.h), which proves nothing.
struct AnchorRules {
  uint16_t csum_size = 4;
  bool nodatasum = false;    // seeds the hash: nodatasum anchors never meet datasum ones
  bool residue_breaks = false;
};

// Calls on_anchor(first_sector, hash) for every selected k-gram of `sums`, in increasing
// sector order, each once. Hashes are never 0.
void for_each_anchor(FileSumsView sums, const AnchorShape& shape, const AnchorRules& rules,
                     const std::function<void(uint64_t sector, uint64_t hash)>& on_anchor);

}  // namespace btrdedupe
