// EXTENT_DATA (file extent item) bytes (btrfs/items.h); inline data is read back in full.
#include <linux/btrfs_tree.h>

#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  if (auto fe = btrfs::decode_file_extent_item(in); fe) {
    fuzz::touch(fe->inline_data);
    fuzz::touch(btrfs::compression_name(fe->compression));
    fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(fe->length() ^ fe->is_hole() ^
                                                   fe->is_prealloc() ^ fe->disk_bytenr);
  } else {
    fuzz::touch(fe.error().message());
  }
  (void)btrfs::item_generation(BTRFS_EXTENT_DATA_KEY, in);
  return 0;
}
