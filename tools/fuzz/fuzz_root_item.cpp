// ROOT_ITEM bytes (btrfs/items.h), with and without the v2 fields.
#include <linux/btrfs_tree.h>

#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  if (auto root = btrfs::decode_root_item(in); root) {
    fuzz::touch({root->uuid, sizeof root->uuid});
    fuzz::touch({root->received_uuid, sizeof root->received_uuid});
    fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(root->generation ^ root->readonly() ^
                                                   root->has_v2_fields ^ root->rtransid);
  } else {
    fuzz::touch(root.error().message());
  }
  (void)btrfs::item_generation(BTRFS_ROOT_ITEM_KEY, in);
  return 0;
}
