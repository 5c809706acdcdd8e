// INODE_REF bytes (btrfs/items.h); the first 8 input bytes are the key offset (the parent).
#include <cstring>

#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t parent = 0;
  if (size >= 8) {
    std::memcpy(&parent, data, 8);
    data += 8;
    size -= 8;
  }
  if (auto refs = btrfs::decode_inode_refs(parent, {data, size}); refs) {
    for (const auto& r : *refs) fuzz::touch(r.name);
  } else {
    fuzz::touch(refs.error().message());
  }
  return 0;
}
