#include "src/fingerprint/sum_anchors.h"

#include <xxhash.h>

#include <algorithm>
#include <deque>

#include "src/fingerprint/sector_checksum.h"

namespace btrdedupe {

AnchorShape anchor_shape(uint64_t min_run_bytes, uint32_t sectorsize, uint16_t csum_size) {
  AnchorShape s;
  const uint32_t cs = std::max<uint16_t>(1, csum_size);
  s.k = (8 + cs - 1) / cs;
  const uint64_t run = sectorsize ? (min_run_bytes + sectorsize - 1) / sectorsize : 1;
  s.min_sectors = std::max<uint64_t>(s.k, run);
  s.w = static_cast<uint32_t>(s.min_sectors - s.k + 1);
  return s;
}

void for_each_anchor(FileSumsView sums, const AnchorShape& shape, const AnchorRules& rules,
                     const std::function<void(uint64_t, uint64_t)>& on_anchor) {
  const uint64_t n = sums.sectors(), k = shape.k, w = shape.w;
  if (n < k) return;
  const uint16_t cs = rules.csum_size;
  // A k-gram starting before usable_from holds an unknown or residue sector.
  uint64_t usable_from = 0;
  std::deque<std::pair<uint64_t, uint64_t>> window;  // (k-gram, hash), hashes increasing
  uint64_t last_emitted = UINT64_MAX;
  for (uint64_t end = 0; end < n; ++end) {  // `end`: the last sector of the k-gram at end-k+1
    const bool bad = !sums.known[end] ||
                     (rules.residue_breaks && is_crc32c_residue({&sums.sums[end * cs], cs}));
    if (bad) usable_from = end + 1;
    if (end + 1 < k) continue;
    const uint64_t i = end + 1 - k;
    if (i >= usable_from) {
      uint64_t h = XXH3_64bits_withSeed(&sums.sums[i * cs], k * cs, rules.nodatasum ? 1 : 0);
      if (h == 0) h = 1;
      while (!window.empty() && window.back().second >= h) window.pop_back();
      window.emplace_back(i, h);
    }
    if (i + 1 < w) continue;  // the first window is not complete yet
    while (!window.empty() && window.front().first + w <= i) window.pop_front();
    if (!window.empty() && window.front().first != last_emitted) {
      last_emitted = window.front().first;
      on_anchor(window.front().first, window.front().second);
    }
  }
}

}  // namespace btrdedupe
