// Fingerprints read from file data (src/fingerprint/extent_reads.h, extent_prefetch.h) over
// real files in a temporary directory: extents the csum tree has no sums for are read by
// workers while a prefetch runs ahead, compressed twins take the sums of the one read, and
// every sum is the crc32c of the sector's bytes, as btrfs stores it.
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <vector>

#include "src/fingerprint/fingerprint.h"
#include "src/fingerprint/sector_checksum.h"
#include "tests/support/memory_tree_source.h"
#include "unit/real_files.h"

namespace btrdedupe {
namespace {

using test::MemoryTreeSource;
using test::RealFiles;
using test::sector_bytes;
constexpr uint64_t kSector = RealFiles::kSectorBytes;

// The sums btrfs would store for `bytes`, sector by sector, zero-padded past their end.
std::vector<uint8_t> expected_sums(const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> sums;
  for (size_t at = 0; at < bytes.size(); at += kSector) {
    std::vector<uint8_t> sector(kSector, 0);
    std::memcpy(sector.data(), bytes.data() + at, std::min<size_t>(kSector, bytes.size() - at));
    const uint32_t c = crc32c(sector);
    for (int i = 0; i < 4; ++i) sums.push_back(static_cast<uint8_t>(c >> (8 * i)));
  }
  return sums;
}

std::vector<uint8_t> sums_of(const FingerprintResult& fp, uint32_t f) {
  const FileSumsView v = fp.files[f];
  return {v.sums.begin(), v.sums.end()};
}

class FingerprintReads : public ::testing::Test {
 protected:
  // A csum tree that exists but holds no sum of the files' extents (one item elsewhere).
  FingerprintReads() {
    csums_.add(BTRFS_CSUM_TREE_OBJECTID,
               {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 1ULL << 50},
               std::vector<uint8_t>(4, 0));
  }

  // A compressed extent at `bytenr` of `disk_sectors` on disk, whose on-disk sectors have
  // the sums `disk_sums` in the csum tree (a twin has the same).
  void compressed_on_disk(uint64_t bytenr, uint64_t disk_sectors, uint8_t disk_sums) {
    csums_.add(BTRFS_CSUM_TREE_OBJECTID,
               {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr},
               std::vector<uint8_t>(disk_sectors * 4, disk_sums));
  }
  // A reference of file f to the compressed extent at `bytenr` (4 sectors, 2 on disk).
  void compressed_ref(uint32_t f, uint64_t file_offset, uint64_t extent_offset, uint64_t length,
                      uint64_t bytenr) {
    FileExtent e;
    e.file = f;
    e.compression = btrfs::Compression::Zstd;
    e.file_offset = file_offset;
    e.length = length;
    e.disk_bytenr = bytenr;
    e.disk_num_bytes = 2 * kSector;
    e.extent_offset = extent_offset;
    files_.scan.extents.push_back(e);
  }

  btrfs::Result<FingerprintResult> run(unsigned threads,
                                       const std::function<void(uint64_t)>& progress = {}) {
    sort_by_physical_identity(files_.scan.extents);
    return fingerprint(files_.scan, progress, nullptr, threads, &csums_);
  }

  RealFiles files_;
  MemoryTreeSource csums_;
};

// 3 MiB of extents without sums: more than one batch, so workers take them in turn while
// the prefetch asks the next ones in; the sums do not depend on how many workers.
TEST_F(FingerprintReads, ExtentsWithoutSumsAreReadByWorkersAlike) {
  std::vector<std::vector<uint8_t>> contents;
  for (uint8_t i = 0; i < 6; ++i) {
    contents.push_back(sector_bytes(static_cast<uint8_t>(10 * i), 128));
    const uint32_t f = files_.add_file("f" + std::to_string(i), contents.back());
    files_.add_extent(f, 0, 128 * kSector);
  }
  for (unsigned threads : {1u, 2u, 3u}) {
    SCOPED_TRACE(std::to_string(threads) + " workers");
    uint64_t last_progress = 0;
    auto fp = run(threads, [&](uint64_t done) {
      EXPECT_GE(done, last_progress);
      last_progress = done;
    });
    ASSERT_TRUE(fp) << fp.error().message();
    for (uint32_t f = 0; f < 6; ++f) {
      EXPECT_TRUE(fp->files[f].complete()) << f;
      EXPECT_EQ(sums_of(*fp, f), expected_sums(contents[f])) << f;
    }
    EXPECT_EQ(fp->stats.extents_read, 6u);
    EXPECT_EQ(fp->stats.bytes_read, 6 * 128 * kSector);
    EXPECT_EQ(fp->stats.read_for.without_checksums, 6 * 128 * kSector);
    EXPECT_EQ(fp->stats.read_errors, 0u);
    EXPECT_EQ(last_progress, 6 * 128 * kSector);
  }
}

// A file gone since the scan: the prefetch passes over it, its worker says why, the others
// are read.
TEST_F(FingerprintReads, AFileGoneAmongManyIsAReadErrorOfItsOwn) {
  std::vector<std::vector<uint8_t>> contents;
  for (uint8_t i = 0; i < 5; ++i) {
    contents.push_back(sector_bytes(static_cast<uint8_t>(7 * i), 192));
    const uint32_t f = files_.add_file("f" + std::to_string(i), contents.back());
    files_.add_extent(f, 0, 192 * kSector);
  }
  std::filesystem::remove(files_.path("f2"));
  auto fp = run(2);
  ASSERT_TRUE(fp) << fp.error().message();
  EXPECT_EQ(fp->stats.read_errors, 1u);
  ASSERT_EQ(fp->stats.errors.size(), 1u);
  EXPECT_NE(fp->stats.errors[0].find(files_.path("f2")), std::string::npos)
      << fp->stats.errors[0];
  for (uint32_t f = 0; f < 5; ++f) {
    if (f == 2) {
      EXPECT_EQ(std::count(fp->files[f].known.begin(), fp->files[f].known.end(), 0), 192);
      continue;
    }
    EXPECT_EQ(sums_of(*fp, f), expected_sums(contents[f])) << f;
  }
  EXPECT_EQ(fp->stats.extents_read, 4u);
}

// Two compressed extents holding the same compressed bytes (equal on-disk sums): one is
// read, the other takes its sums without a read.
TEST_F(FingerprintReads, ACompressedTwinTakesTheSumsOfTheOneRead) {
  const auto bytes = sector_bytes(3, 4);
  const uint32_t a = files_.add_file("a", bytes), b = files_.add_file("b", bytes);
  compressed_on_disk(1 << 20, 2, 0x5a);
  compressed_on_disk(2 << 20, 2, 0x5a);
  compressed_ref(a, 0, 0, 4 * kSector, 1 << 20);
  compressed_ref(b, 0, 0, 4 * kSector, 2 << 20);
  auto fp = run(1);
  ASSERT_TRUE(fp) << fp.error().message();
  EXPECT_EQ(sums_of(*fp, a), expected_sums(bytes));
  EXPECT_EQ(sums_of(*fp, b), expected_sums(bytes));
  EXPECT_EQ(fp->stats.extents_read, 1u);
  EXPECT_EQ(fp->stats.bytes_read, 4 * kSector);
  EXPECT_EQ(fp->stats.extents_from_twins, 1u);
  EXPECT_EQ(fp->stats.bytes_from_twins, 4 * kSector);
  EXPECT_EQ(fp->stats.read_for.twin_groups, 4 * kSector);
}

// The extent read for a group covers only the sectors its own references reach; a twin
// referenced further is read for the rest.
TEST_F(FingerprintReads, ATwinReferencedFurtherIsReadForTheRest) {
  const auto bytes = sector_bytes(5, 4);
  const uint32_t x = files_.add_file("x", bytes), y = files_.add_file("y", bytes);
  compressed_on_disk(1 << 20, 2, 0x33);
  compressed_on_disk(2 << 20, 2, 0x33);
  compressed_ref(x, 0, 0, 2 * kSector, 1 << 20);                  // sectors 0-1 ...
  compressed_ref(x, 3 * kSector, 3 * kSector, kSector, 1 << 20);  // ... and 3: not 2
  compressed_ref(y, 0, 0, 4 * kSector, 2 << 20);
  auto fp = run(1);
  ASSERT_TRUE(fp) << fp.error().message();
  EXPECT_EQ(sums_of(*fp, y), expected_sums(bytes));
  const FileSumsView xs = fp->files[x];
  EXPECT_EQ(std::vector<uint8_t>(xs.known.begin(), xs.known.end()),
            (std::vector<uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(fp->stats.read_for.twin_remainders, 4 * kSector);
  EXPECT_EQ(fp->stats.extents_from_twins, 0u);
  EXPECT_EQ(fp->stats.extents_read, 2u);
  EXPECT_EQ(fp->stats.bytes_read, 4 * kSector);  // 3 sectors of x, then 1 of y
}

// Without a csum source of its own, fingerprint() searches the kernel's through the first
// root: a directory that is not on btrfs has none to search.
TEST_F(FingerprintReads, TheKernelsCsumTreeOfARootNotOnBtrfsIsAnError) {
  const uint32_t f = files_.add_file("f", sector_bytes(1, 2));
  files_.add_extent(f, 0, 2 * kSector);
  EXPECT_FALSE(fingerprint(files_.scan, {}, nullptr, 1, nullptr));
  files_.scan.roots[0].path = files_.path("missing");
  auto gone = fingerprint(files_.scan, {}, nullptr, 1, nullptr);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOENT);
}

}  // namespace
}  // namespace btrdedupe
