#include "src/sector_checksum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace btrdedupe {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

std::string sum(btrfs::CsumType type, const std::string& data) {
  SectorChecksum c(type);
  std::vector<uint8_t> out(c.size());
  c.compute(bytes(data), out.data());
  return hex(out.data(), out.size());
}

TEST(SectorChecksum, Crc32cKnownVectors) {
  EXPECT_EQ(crc32c(bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(bytes("")), 0u);
  EXPECT_EQ(crc32c(bytes(std::string(32, '\0'))), 0x8A9136AAu);  // RFC 3720 B.4
  // Stored little-endian in the csum tree.
  EXPECT_EQ(sum(btrfs::CsumType::Crc32c, "123456789"), "839206e3");
}

TEST(SectorChecksum, Crc32cIncremental) {
  const std::string a = "hello, ", b = "world of sectors and more bytes";
  EXPECT_EQ(crc32c(bytes(b), crc32c(bytes(a))), crc32c(bytes(a + b)));
}

TEST(SectorChecksum, OtherAlgorithmsKnownVectors) {
  EXPECT_EQ(sum(btrfs::CsumType::Sha256, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // BLAKE2b-256 of "abc" (RFC 7693 parameters, 32-byte digest).
  EXPECT_EQ(sum(btrfs::CsumType::Blake2b, "abc"),
            "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
  // XXH64("", seed 0) = 0xEF46DB3751D8E999, stored little-endian.
  EXPECT_EQ(sum(btrfs::CsumType::Xxhash64, ""), "99e9d85137db46ef");
}

}  // namespace
}  // namespace btrdedupe
