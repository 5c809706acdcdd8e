#include "support/memory_tree_source.h"

#include <cerrno>
#include <string>

#include "btrfs/items.h"

namespace btrdedupe::test {
namespace {

using Key = MemoryTreeSource::Key;

bool leaf_in_range(const MemoryTreeSource::Stored& s, const btrfs::SearchKey& box) {
  return s.leaf_generation >= box.min_transid && s.leaf_generation <= box.max_transid;
}

// What the kernel says of a tree id with no root (a subvolume deleted, or never made).
btrfs::Error no_tree(uint64_t id) {
  return btrfs::Error{ENOENT, "tree " + std::to_string(id) + " not in the memory tree source"};
}

// The items of a box in key order, filtered as TreeSearch::wanted() and the kernel do.
class MemoryCursor final : public btrfs::ItemCursor {
 public:
  MemoryCursor(const MemoryTreeSource::Tree* tree, const btrfs::SearchKey& box)
      : box_(box), missing_(!tree) {
    if (!tree) return;
    at_ = tree->lower_bound({box.min_objectid, box.min_type, box.min_offset});
    end_ = tree->upper_bound({box.max_objectid, box.max_type, box.max_offset});
  }

  btrfs::Result<std::optional<btrfs::TreeItem>> next() override {
    if (missing_) return no_tree(box_.tree_id);
    for (; at_ != end_; ++at_) {
      const auto& [key, stored] = *at_;
      const auto [objectid, type, offset] = key;
      if (!leaf_in_range(stored, box_)) continue;
      // The box applies to each field, not only to the 136-bit interval.
      if (objectid < box_.min_objectid || objectid > box_.max_objectid) continue;
      if (type < box_.min_type || type > box_.max_type) continue;
      if (offset < box_.min_offset || offset > box_.max_offset) continue;
      if (box_.min_transid > 0) {
        const auto generation = btrfs::item_generation(type, stored.data);
        if (generation && *generation < box_.min_transid) continue;
      }
      btrfs::TreeItem item{objectid, type, offset, stored.leaf_generation, stored.data};
      ++at_;
      return std::optional<btrfs::TreeItem>{item};
    }
    return std::optional<btrfs::TreeItem>{};
  }
  uint64_t ioctl_calls() const override { return 0; }

 private:
  btrfs::SearchKey box_;
  bool missing_;
  MemoryTreeSource::Tree::const_iterator at_{}, end_{};
};

}  // namespace

void MemoryTreeSource::add(uint64_t tree, const btrfs::ItemKey& key, std::vector<uint8_t> data,
                           std::optional<uint64_t> leaf_generation) {
  const uint64_t generation =
      leaf_generation ? *leaf_generation : btrfs::item_generation(key.type, data).value_or(0);
  trees_[tree][{key.objectid, key.type, key.offset}] = {std::move(data), generation};
}

bool MemoryTreeSource::remove(uint64_t tree, const btrfs::ItemKey& key) {
  auto t = trees_.find(tree);
  return t != trees_.end() && t->second.erase({key.objectid, key.type, key.offset}) > 0;
}

size_t MemoryTreeSource::items(uint64_t tree) const {
  const Tree* t = this->tree(tree);
  return t ? t->size() : 0;
}

const MemoryTreeSource::Tree* MemoryTreeSource::tree(uint64_t id) const {
  auto t = trees_.find(id == 0 ? default_tree_ : id);
  return t == trees_.end() ? nullptr : &t->second;
}

std::unique_ptr<btrfs::ItemCursor> MemoryTreeSource::search(const btrfs::SearchKey& key,
                                                            size_t /*buffer_bytes*/) {
  ++searches_;
  return std::make_unique<MemoryCursor>(tree(key.tree_id), key);
}

btrfs::Result<std::optional<btrfs::ItemKey>> MemoryTreeSource::first_key(
    const btrfs::SearchKey& key) {
  ++probes_;
  const Tree* t = tree(key.tree_id);
  if (!t) return no_tree(key.tree_id);
  const Key max{key.max_objectid, key.max_type, key.max_offset};
  for (auto it = t->lower_bound({key.min_objectid, key.min_type, key.min_offset});
       it != t->end() && it->first <= max; ++it) {
    if (!leaf_in_range(it->second, key)) continue;
    const auto [objectid, type, offset] = it->first;
    return std::optional<btrfs::ItemKey>{btrfs::ItemKey{objectid, type, offset}};
  }
  return std::optional<btrfs::ItemKey>{};
}

}  // namespace btrdedupe::test
