#include "src/match/anchor_index.h"

namespace btrdedupe {

AnchorIndex::Slot& AnchorIndex::slot_for(uint64_t hash) {
  // Anchor hashes are XXH3 output: their low bits are already uniform.
  const uint64_t mask = slots_.size() - 1;
  for (uint64_t i = hash & mask;; i = (i + 1) & mask)
    if (slots_[i].hash == hash || slots_[i].hash == 0) return slots_[i];
}

void AnchorIndex::grow() {
  std::vector<Slot> old(slots_.empty() ? 1024 : slots_.size() * 2);
  old.swap(slots_);
  for (const Slot& s : old)
    if (s.hash) slot_for(s.hash) = s;
}

std::optional<SectorRef> AnchorIndex::find_or_add(uint64_t hash, SectorRef here) {
  if ((used_ + 1) * 8 > slots_.size() * 5) grow();
  Slot& s = slot_for(hash);
  if (s.hash) return s.ref;
  s = {hash, here};
  ++used_;
  return std::nullopt;
}

void AnchorIndex::replace(uint64_t hash, SectorRef here) {
  if ((used_ + 1) * 8 > slots_.size() * 5) grow();
  Slot& s = slot_for(hash);
  if (!s.hash) ++used_;
  s = {hash, here};
}

}  // namespace btrdedupe
