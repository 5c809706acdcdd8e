#include "src/catalog/catalog_memory_rows.h"

#include <algorithm>

#include "src/read/hash_mix.h"

namespace btrdedupe {
namespace {

uint64_t key_hash(const FileKey& k) { return mix64(k.subvolume) ^ k.inode; }

constexpr size_t kFirstSlots = 1024;

}  // namespace

template <typename Matches>
size_t CatalogMemoryRows::probe(const Slots& s, uint64_t wanted_hash, Matches matches) {
  const size_t mask = s.slots.size() - 1;
  for (size_t i = mix64(wanted_hash) & mask;; i = (i + 1) & mask)
    if (s.slots[i] == 0 || matches(s.slots[i])) return i;
}

// At most half full, so that a probe ends after a few slots.
template <typename HashOf>
void CatalogMemoryRows::grow(Slots& s, HashOf hash_of) {
  if (2 * (s.used + 1) <= s.slots.size()) return;
  Slots bigger;
  bigger.slots.assign(std::max(kFirstSlots, 2 * s.slots.size()), 0);
  bigger.used = s.used;
  for (uint32_t n : s.slots)
    if (n) bigger.slots[probe(bigger, hash_of(n), [](uint32_t) { return false; })] = n;
  s = std::move(bigger);
}

uint32_t CatalogMemoryRows::live_number(const FileKey& key) const {
  if (by_key_.slots.empty()) return 0;
  const uint32_t n = by_key_.slots[probe(by_key_, key_hash(key),
                                         [&](uint32_t m) { return rows_[m - 1].key == key; })];
  return n && rows_[n - 1].live ? n : 0;
}

CatalogMemoryRows::Row* CatalogMemoryRows::live_row(const FileKey& key) {
  const uint32_t n = live_number(key);
  return n ? &rows_[n - 1] : nullptr;
}

const CatalogFile* CatalogMemoryRows::find(const FileKey& key) const {
  const uint32_t n = live_number(key);
  return n ? &rows_[n - 1].file : nullptr;
}

void CatalogMemoryRows::put_in_chain(Slots& s, uint64_t hash, uint32_t number,
                                     uint32_t& next_same_hash, bool anchors) {
  const auto hash_of = [&](uint32_t m) {
    return anchors ? anchors_[m - 1].hash : *rows_[m - 1].file.whole_hash;
  };
  grow(s, hash_of);
  const size_t i = probe(s, hash, [&](uint32_t m) { return hash_of(m) == hash; });
  if (s.slots[i] == 0) ++s.used;
  next_same_hash = s.slots[i];
  s.slots[i] = number;
}

std::vector<uint64_t> CatalogMemoryRows::anchors_of(const Row& row) const {
  std::vector<uint64_t> out;
  for (uint32_t a = 0; a < row.anchor_count; ++a) out.push_back(anchors_[row.first_anchor + a].hash);
  return out;
}

void CatalogMemoryRows::add(const FileKey& key, const CatalogFile& file,
                            const std::vector<uint64_t>& new_anchors) {
  grow(by_key_, [&](uint32_t m) { return key_hash(rows_[m - 1].key); });
  const size_t slot =
      probe(by_key_, key_hash(key), [&](uint32_t m) { return rows_[m - 1].key == key; });
  std::vector<uint64_t> kept;
  if (const uint32_t old = by_key_.slots[slot]; old == 0) {
    ++by_key_.used;
  } else if (rows_[old - 1].live) {
    rows_[old - 1].live = false;
    --live_;
    kept = anchors_of(rows_[old - 1]);
    kept.insert(kept.end(), new_anchors.begin(), new_anchors.end());
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  }
  const std::vector<uint64_t>& anchors = kept.empty() ? new_anchors : kept;
  rows_.push_back({key, file, 0, static_cast<uint32_t>(anchors_.size()),
                   static_cast<uint32_t>(anchors.size()), true});
  const auto number = static_cast<uint32_t>(rows_.size());
  by_key_.slots[slot] = number;
  ++live_;
  if (file.whole_hash)
    put_in_chain(by_hash_, *file.whole_hash, number, rows_.back().next_same_hash, false);
  for (uint64_t hash : anchors) {
    anchors_.push_back({hash, number - 1, 0});
    put_in_chain(by_anchor_, hash, static_cast<uint32_t>(anchors_.size()),
                 anchors_.back().next_same_hash, true);
  }
}

bool CatalogMemoryRows::remove(const FileKey& key) {
  Row* row = live_row(key);
  if (!row) return false;
  row->live = false;
  --live_;
  return true;
}

bool CatalogMemoryRows::set_short_hash(const FileKey& key, uint64_t hash) {
  Row* row = live_row(key);
  if (row) row->file.short_hash = hash;
  return row != nullptr;
}

bool CatalogMemoryRows::set_parent(const FileKey& key, uint64_t parent) {
  Row* row = live_row(key);
  if (row) row->file.parent = parent;
  return row != nullptr;
}

std::vector<FileKey> CatalogMemoryRows::in_key_order(std::vector<FileKey> keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<FileKey> CatalogMemoryRows::with_hash(uint64_t hash) const {
  std::vector<FileKey> out;
  if (by_hash_.slots.empty()) return out;
  const auto hash_of = [&](uint32_t m) { return *rows_[m - 1].file.whole_hash; };
  for (uint32_t n = by_hash_.slots[probe(by_hash_, hash,
                                         [&](uint32_t m) { return hash_of(m) == hash; })];
       n; n = rows_[n - 1].next_same_hash)
    if (rows_[n - 1].live) out.push_back(rows_[n - 1].key);
  return in_key_order(std::move(out));
}

std::vector<FileKey> CatalogMemoryRows::with_anchor(uint64_t hash) const {
  std::vector<FileKey> out;
  if (by_anchor_.slots.empty()) return out;
  for (uint32_t n = by_anchor_.slots[probe(by_anchor_, hash,
                                           [&](uint32_t m) { return anchors_[m - 1].hash == hash; })];
       n; n = anchors_[n - 1].next_same_hash) {
    const Row& row = rows_[anchors_[n - 1].row];
    if (row.live) out.push_back(row.key);
  }
  return in_key_order(std::move(out));
}

void CatalogMemoryRows::for_each(
    const std::function<void(const FileKey&, const CatalogFile&, const std::vector<uint64_t>&)>&
        fn) const {
  for (const Row& row : rows_)
    if (row.live) fn(row.key, row.file, anchors_of(row));
}

void CatalogMemoryRows::clear() {
  std::deque<Row>().swap(rows_);
  std::deque<Anchor>().swap(anchors_);
  by_key_ = by_hash_ = by_anchor_ = Slots{};
  live_ = 0;
}

size_t CatalogMemoryRows::bytes() const {
  return rows_.size() * sizeof(Row) + anchors_.size() * sizeof(Anchor) +
         (by_key_.slots.size() + by_hash_.slots.size() + by_anchor_.slots.size()) *
             sizeof(uint32_t);
}

}  // namespace btrdedupe
