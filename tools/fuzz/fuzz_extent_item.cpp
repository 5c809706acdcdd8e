// EXTENT_ITEM / METADATA_ITEM bytes (btrfs/items.h); the first input byte picks the key
// type: even = EXTENT_ITEM, odd = METADATA_ITEM, and one in 16 some other type (EINVAL).
#include <linux/btrfs_tree.h>

#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  const uint8_t type = pick % 16 == 15   ? pick
                       : pick % 2 == 0 ? uint8_t{BTRFS_EXTENT_ITEM_KEY}
                                       : uint8_t{BTRFS_METADATA_ITEM_KEY};
  const std::span<const uint8_t> in(data + 1, size - 1);
  if (auto item = btrfs::decode_extent_item(type, in); item) {
    for (const auto& r : item->inline_refs)
      fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(r.type ^ r.root ^ r.objectid ^ r.offset ^
                                                     r.count);
    fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(item->refs ^ item->is_data());
  } else {
    fuzz::touch(item.error().message());
  }
  (void)btrfs::item_generation(type, in);
  return 0;
}
