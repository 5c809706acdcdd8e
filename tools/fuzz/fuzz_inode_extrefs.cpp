// INODE_EXTREF bytes (btrfs/items.h).
#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (auto refs = btrfs::decode_inode_extrefs({data, size}); refs) {
    for (const auto& r : *refs) {
      fuzz::touch(r.name);
      fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(r.parent ^ r.index);
    }
  } else {
    fuzz::touch(refs.error().message());
  }
  return 0;
}
