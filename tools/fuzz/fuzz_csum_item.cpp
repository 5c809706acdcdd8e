// EXTENT_CSUM item bytes (btrfs/items.h); the first input byte picks the checksum size
// (4, 8, 32, or the byte itself one time in 8), the next 8 the key offset.
#include <cstring>

#include "btrfs/items.h"
#include "tools/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  static const uint16_t sizes[] = {4, 8, 32, 32};
  const uint16_t csum_size = data[0] % 8 == 7 ? data[0] : sizes[data[0] % 4];
  uint64_t offset = 0;
  std::memcpy(&offset, data + 1, 8);
  if (auto item = btrfs::decode_csum_item(offset, {data + 9, size - 9}, csum_size); item) {
    for (uint64_t i = 0; i < item->sectors(); ++i)
      fuzz::touch(item->sums.subspan(i * item->csum_size, item->csum_size));
  } else {
    fuzz::touch(item.error().message());
  }
  return 0;
}
