#include "src/fingerprint/sector_checksum.h"

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

// A sector holding a structure that ends in its own raw crc32c (as an ext4 superblock does),
// then zeros: its sector sum is 0xffffffff whatever the structure holds.
std::string self_checksummed_sector(uint16_t group) {
  std::string s(4096, '\0');
  for (size_t i = 0; i < 1020; ++i) s[i] = static_cast<char>(i * 7 + 3);
  s[90] = static_cast<char>(group & 0xff);
  s[91] = static_cast<char>(group >> 8);
  const uint32_t raw = ~crc32c(bytes(s.substr(0, 1020)));  // seed ~0, no final inversion
  for (int i = 0; i < 4; ++i) s[1020 + i] = static_cast<char>(raw >> (8 * i));
  return s;
}

TEST(SectorChecksum, SectorsEndingInTheirOwnCrcShareOneSum) {
  const std::string a = self_checksummed_sector(7), b = self_checksummed_sector(9);
  ASSERT_NE(a, b);
  EXPECT_EQ(sum(btrfs::CsumType::Crc32c, a), "ffffffff");
  EXPECT_EQ(sum(btrfs::CsumType::Crc32c, b), "ffffffff");
  const uint8_t residue[4] = {0xff, 0xff, 0xff, 0xff}, other[4] = {0xff, 0xff, 0xff, 0xfe};
  EXPECT_TRUE(is_crc32c_residue(residue));
  EXPECT_FALSE(is_crc32c_residue(other));
  // Not a property of the other algorithms.
  EXPECT_NE(sum(btrfs::CsumType::Xxhash64, a), sum(btrfs::CsumType::Xxhash64, b));
}

}  // namespace
}  // namespace btrdedupe
