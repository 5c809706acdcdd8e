// INODE_ITEM bytes from a tree search (btrfs/items.h).
#include <linux/btrfs_tree.h>

#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  if (auto item = btrfs::decode_inode_item(in); item) {
    fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(item->size ^ item->flags ^ item->mode ^
                                                   item->is_regular() ^ item->nodatasum());
  } else {
    fuzz::touch(item.error().message());
  }
  (void)btrfs::item_generation(BTRFS_INODE_ITEM_KEY, in);
  return 0;
}
