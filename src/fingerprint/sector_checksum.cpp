#include "src/fingerprint/sector_checksum.h"

#include <sodium.h>
#include <xxhash.h>

#include <array>
#include <cstring>

namespace btrdedupe {
namespace {

std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t crc32c_table(const uint8_t* p, size_t n, uint32_t c) {
  static const auto table = make_crc32c_table();
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(const uint8_t* p, size_t n, uint32_t c) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
  }
  c = static_cast<uint32_t>(c64);
  for (; n > 0; --n, ++p) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}
bool have_sse42() { return __builtin_cpu_supports("sse4.2"); }
#endif

void store_le32(uint32_t v, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

void store_le64(uint64_t v, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint16_t size_of(btrfs::CsumType type) {
  switch (type) {
    case btrfs::CsumType::Crc32c: return 4;
    case btrfs::CsumType::Xxhash64: return 8;
    case btrfs::CsumType::Sha256: return 32;
    case btrfs::CsumType::Blake2b: return 32;
  }
  return 0;
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc) {
  uint32_t c = ~crc;
#if defined(__x86_64__)
  static const bool hw = have_sse42();
  c = hw ? crc32c_hw(data.data(), data.size(), c) : crc32c_table(data.data(), data.size(), c);
#else
  c = crc32c_table(data.data(), data.size(), c);
#endif
  return ~c;
}

SectorChecksum::SectorChecksum(btrfs::CsumType type) : type_(type), size_(size_of(type)) {
  if (sodium_init() < 0) size_ = 0;  // only fails when the library cannot initialise at all
}

void SectorChecksum::compute(std::span<const uint8_t> sector, uint8_t* out) const {
  switch (type_) {
    case btrfs::CsumType::Crc32c:
      store_le32(crc32c(sector), out);
      break;
    case btrfs::CsumType::Xxhash64:
      store_le64(XXH64(sector.data(), sector.size(), 0), out);
      break;
    case btrfs::CsumType::Sha256:
      crypto_hash_sha256(out, sector.data(), sector.size());
      break;
    case btrfs::CsumType::Blake2b:
      crypto_generichash(out, 32, sector.data(), sector.size(), nullptr, 0);
      break;
  }
}

}  // namespace btrdedupe
