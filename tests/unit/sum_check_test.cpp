// The maintainer's check of fingerprints against the data (src/fingerprint/sum_check.h),
// over real files in a temporary directory and fingerprints written by hand: each sector's
// expected sum is the crc32c of its bytes, as btrfs stores it (little-endian).
#include "src/fingerprint/sum_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/fingerprint/sector_checksum.h"
#include "unit/real_files.h"

namespace btrdedupe {
namespace {

using test::RealFiles;
using test::sector_bytes;
constexpr uint32_t kSector = RealFiles::kSectorBytes;

// crc32c of sector `s` of `bytes`, zero-padded past their end, little-endian.
std::vector<uint8_t> sector_sum(const std::vector<uint8_t>& bytes, size_t s) {
  std::vector<uint8_t> sector(kSector, 0);
  const size_t from = s * kSector;
  if (from < bytes.size())
    std::memcpy(sector.data(), bytes.data() + from, std::min<size_t>(kSector, bytes.size() - from));
  const uint32_t c = crc32c(sector);
  return {static_cast<uint8_t>(c), static_cast<uint8_t>(c >> 8), static_cast<uint8_t>(c >> 16),
          static_cast<uint8_t>(c >> 24)};
}

std::string hex_of(const std::vector<uint8_t>& sum) {
  std::string out;
  char two[3];
  for (uint8_t b : sum) {
    std::snprintf(two, sizeof two, "%02x", b);
    out += two;
  }
  return out;
}

class SumCheckTest : public ::testing::Test {
 protected:
  SumCheckTest() { fp_.files = FileSumsTable(4); }

  // A file holding `bytes`, one extent over all of it, every sector's sum known and right.
  uint32_t add_summed(const std::string& name, const std::vector<uint8_t>& bytes) {
    const uint32_t f = files_.add_file(name, bytes);
    const uint64_t sectors = (bytes.size() + kSector - 1) / kSector;
    files_.add_extent(f, 0, bytes.size());
    fp_.files.add(sectors);
    for (uint64_t s = 0; s < sectors; ++s) set_sum(f, s, sector_sum(bytes, s));
    return f;
  }

  void set_sum(uint32_t f, uint64_t s, const std::vector<uint8_t>& sum) {
    std::memcpy(fp_.files.sums(f).data() + s * 4, sum.data(), 4);
    fp_.files.known(f)[s] = 1;
  }

  SumCheck check(size_t keep = 20) {
    sort_by_physical_identity(files_.scan.extents);
    return check_sums(files_.scan, fp_, keep);
  }

  RealFiles files_;
  FingerprintResult fp_;
};

TEST_F(SumCheckTest, RightSumsPass) {
  add_summed("a", sector_bytes(1, 3));
  add_summed("b", sector_bytes(7, 2, 100));  // a partial last sector, summed zero-padded
  const SumCheck c = check();
  EXPECT_TRUE(c.ok()) << summary_line(c);
  EXPECT_EQ(c.files, 2u);
  EXPECT_EQ(c.sectors_checked, 6u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_EQ(c.sectors_unknown + c.sectors_without_data + c.sectors_nodatasum, 0u);
}

TEST_F(SumCheckTest, AWrongSumIsAMismatchWithBothSums) {
  const auto bytes = sector_bytes(1, 3);
  const uint32_t f = add_summed("a", bytes);
  set_sum(f, 1, sector_sum(bytes, 2));  // sector 2's sum where sector 1 is
  const SumCheck c = check();
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.sectors_checked, 3u);
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].file, f);
  EXPECT_EQ(c.first[0].offset, kSector);
  EXPECT_EQ(c.first[0].fingerprint, hex_of(sector_sum(bytes, 2)));
  EXPECT_EQ(c.first[0].data, hex_of(sector_sum(bytes, 1)));
}

TEST_F(SumCheckTest, OnlyTheFirstMismatchesAreListed) {
  const auto bytes = sector_bytes(1, 4);
  const uint32_t f = add_summed("a", bytes);
  for (uint64_t s = 0; s < 4; ++s) set_sum(f, s, {0, 0, 0, 0});
  const SumCheck c = check(2);
  EXPECT_EQ(c.mismatches, 4u);
  ASSERT_EQ(c.first.size(), 2u);
  EXPECT_EQ(c.first[0].offset, 0u);
  EXPECT_EQ(c.first[1].offset, kSector);
  EXPECT_EQ(c.first[1].fingerprint, "00000000");
}

TEST_F(SumCheckTest, SectorsTheFingerprintLeftUnknownAreCountedNotCompared) {
  const auto bytes = sector_bytes(1, 3);
  const uint32_t f = add_summed("a", bytes);
  fp_.files.known(f)[2] = 0;
  const SumCheck c = check();
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.sectors_checked, 2u);
  EXPECT_EQ(c.sectors_unknown, 1u);
}

// A hole reads as zeros and has no sum: a known sum there would be matched as content.
TEST_F(SumCheckTest, AKnownSumWhereNoExtentIsIsAMismatch) {
  const auto bytes = sector_bytes(1, 4);
  const uint32_t f = files_.add_file("sparse", bytes);
  files_.add_extent(f, 0, kSector);
  files_.add_extent(f, 3 * kSector, kSector);
  fp_.files.add(4);
  set_sum(f, 0, sector_sum(bytes, 0));
  set_sum(f, 2, sector_sum(bytes, 2));  // no extent holds sector 2
  set_sum(f, 3, sector_sum(bytes, 3));
  const SumCheck c = check();
  EXPECT_EQ(c.sectors_checked, 2u);
  EXPECT_EQ(c.sectors_without_data, 2u);
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].offset, 2 * kSector);
  EXPECT_EQ(c.first[0].fingerprint, hex_of(sector_sum(bytes, 2)));
  EXPECT_EQ(c.first[0].data, "none");
}

TEST_F(SumCheckTest, NoDataSumFilesAreSkippedUnread) {
  const uint32_t f = files_.add_file("nocow", sector_bytes(1, 3, 1));
  files_.scan.files[f].inode_flags = btrfs::kInodeNoDataSum;
  files_.add_extent(f, 0, 3 * kSector + 1);
  fp_.files.add(4);
  const SumCheck c = check();
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.files, 1u);
  EXPECT_EQ(c.sectors_nodatasum, 4u);
  EXPECT_EQ(c.sectors_checked, 0u);
}

// Files over one read chunk (1 MiB) are read in several.
TEST_F(SumCheckTest, ALargeFileIsCheckedAcrossReadChunks) {
  const auto bytes = sector_bytes(3, 300);
  const uint32_t f = add_summed("large", bytes);
  set_sum(f, 290, sector_sum(bytes, 10));
  const SumCheck c = check();
  EXPECT_EQ(c.sectors_checked, 300u);
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].offset, 290ull * kSector);
}

TEST_F(SumCheckTest, AFileShorterThanScannedIsAReadError) {
  const auto bytes = sector_bytes(1, 3);
  add_summed("shrunk", bytes);
  files_.write("shrunk", sector_bytes(1, 1));
  const uint32_t g = add_summed("fine", sector_bytes(5, 2));
  const SumCheck c = check();
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.read_errors, 1u);
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0], files_.path("shrunk") + ": shorter than scanned");
  EXPECT_EQ(c.files, 2u);
  EXPECT_EQ(c.sectors_checked, 2u);  // only the other file's
  EXPECT_EQ(g, 1u);
}

TEST_F(SumCheckTest, AFileThatCannotBeOpenedIsAReadError) {
  add_summed("gone", sector_bytes(1, 2));
  add_summed("gone too", sector_bytes(1, 2));
  std::filesystem::remove(files_.path("gone"));
  std::filesystem::remove(files_.path("gone too"));
  const SumCheck c = check(1);
  EXPECT_EQ(c.read_errors, 2u);
  ASSERT_EQ(c.errors.size(), 1u);  // keep: 1
  EXPECT_NE(c.errors[0].find(files_.path("gone")), std::string::npos) << c.errors[0];
  EXPECT_EQ(c.sectors_checked, 0u);
}

}  // namespace
}  // namespace btrdedupe
