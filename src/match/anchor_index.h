// The partial matcher's index: anchor hash -> where it was first seen (file, sector).
//
// Open addressing over one flat array of 16-byte slots, kept between 5/16 and 5/8 full
// (it doubles): 26 to 51 bytes per anchor, no node or allocation per entry. It holds
// distinct anchor hashes only (a hash seen again is looked up, not added), so its size
// follows the distinct content: about 2/(w+1) of the sectors are anchors
// (src/fingerprint/sum_anchors.h), 1/16 with the default 128 KiB minimum run, so 16,384 anchors and
// 0.4 to 0.8 MiB per GiB of distinct data (the crc32c sums themselves take 1.25 MiB).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace btrdedupe {

struct SectorRef {
  uint32_t file = 0;
  uint32_t sector = 0;  // files of more than 2^32 sectors (16 TiB) index their head only
  bool operator==(const SectorRef&) const = default;
};

class AnchorIndex {
 public:
  // The place first recorded for `hash` (never 0); records `here` when there is none.
  std::optional<SectorRef> find_or_add(uint64_t hash, SectorRef here);
  // Records `here` for `hash` (never 0), replacing what was there.
  void replace(uint64_t hash, SectorRef here);

  uint64_t size() const { return used_; }
  uint64_t memory_bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    SectorRef ref;
  };
  Slot& slot_for(uint64_t hash);  // its slot, or the empty one where it belongs
  void grow();

  std::vector<Slot> slots_;
  uint64_t used_ = 0;
};

}  // namespace btrdedupe
