#include "btrfs/tree_source.h"

namespace btrfs {
namespace {

// TreeSearch behind the cursor interface: one virtual call per item, no copy of its data.
class KernelCursor final : public ItemCursor {
 public:
  KernelCursor(int fd, const SearchKey& key, size_t buffer_bytes)
      : search_(fd, key, buffer_bytes) {}
  Result<std::optional<TreeItem>> next() override { return search_.next(); }
  uint64_t ioctl_calls() const override { return search_.ioctl_calls(); }

 private:
  TreeSearch search_;
};

}  // namespace

std::unique_ptr<ItemCursor> KernelTreeSource::search(const SearchKey& key, size_t buffer_bytes) {
  return std::make_unique<KernelCursor>(fd_, key, buffer_bytes);
}

Result<std::optional<ItemKey>> KernelTreeSource::first_key(const SearchKey& key) {
  return first_item_key(fd_, key);
}

}  // namespace btrfs
