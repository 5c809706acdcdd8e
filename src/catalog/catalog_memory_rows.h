// The rows of a catalog that serves one run (Catalog::use_for_one_run), held in memory up
// to a bound: a windowed run looks up every file of every window by whole-file hash and
// anchor, and writes most of them. In SQLite that was ~5 µs per file (a window's whole
// catalog cost); here it is a few hash probes. Past the bound the Catalog writes them to
// SQLite and starts again (src/catalog/catalog.cpp), so memory stays flat however large the tree.
//
// Contract: the same answers as the SQLite tables would give for the same calls: one row
// per key (a later add replaces the row and adds to its anchors, as Catalog::add_file
// does), a removed row gone with its anchors, keys returned in (subvolume, inode) order.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "src/catalog/catalog.h"

namespace btrdedupe {

class CatalogMemoryRows {
 public:
  // Replaces any row of `key`; its anchors stay, with `anchors` added.
  void add(const FileKey& key, const CatalogFile& file, const std::vector<uint64_t>& anchors);
  // False: no row of `key` is held.
  bool remove(const FileKey& key);
  // nullptr: no row of `key` is held. Valid until the next add() or clear().
  const CatalogFile* find(const FileKey& key) const;
  // False: no row of `key` is held.
  bool set_short_hash(const FileKey& key, uint64_t hash);
  bool set_parent(const FileKey& key, uint64_t parent);
  // Keys of the rows with whole-file hash / with an anchor of hash `hash`, in key order.
  std::vector<FileKey> with_hash(uint64_t hash) const;
  std::vector<FileKey> with_anchor(uint64_t hash) const;

  // Every row held, with its anchors, in the order added.
  void for_each(const std::function<void(const FileKey&, const CatalogFile&,
                                         const std::vector<uint64_t>&)>& fn) const;
  void clear();
  bool empty() const { return live_ == 0; }
  size_t rows() const { return live_; }
  // What the rows and their indexes take, approximately (replaced rows count until clear()).
  size_t bytes() const;

 private:
  struct Row {
    FileKey key;
    CatalogFile file;
    uint32_t next_same_hash = 0;  // row + 1 of the previous row with this whole hash; 0: none
    uint32_t first_anchor = 0, anchor_count = 0;
    bool live = true;
  };
  struct Anchor {
    uint64_t hash = 0;
    uint32_t row = 0;
    uint32_t next_same_hash = 0;  // anchor + 1 of the previous with this hash; 0: none
  };
  // Open addressing over row or anchor numbers + 1 (0: empty slot), so that an index costs
  // 8 bytes per entry at its fullest rather than a node per entry.
  struct Slots {
    std::vector<uint32_t> slots;
    size_t used = 0;
  };

  // The slot of `wanted` in `s`: where its number is, or the empty slot it would take.
  // `matches(n)` tells whether number n (row or anchor + 1) is of `wanted`.
  template <typename Matches>
  static size_t probe(const Slots& s, uint64_t wanted_hash, Matches matches);
  template <typename HashOf>
  static void grow(Slots& s, HashOf hash_of);
  // Row number + 1 of the live row of `key`; 0: none.
  uint32_t live_number(const FileKey& key) const;
  Row* live_row(const FileKey& key);
  void put_in_chain(Slots& s, uint64_t hash, uint32_t number, uint32_t& next_same_hash,
                    bool anchors);
  std::vector<uint64_t> anchors_of(const Row& row) const;
  static std::vector<FileKey> in_key_order(std::vector<FileKey> keys);

  std::deque<Row> rows_;
  std::deque<Anchor> anchors_;
  Slots by_key_, by_hash_, by_anchor_;  // heads of chains in by_hash_ and by_anchor_
  size_t live_ = 0;
};

}  // namespace btrdedupe
