// Data reads for fingerprints with several workers: the same sums, counts and errors
// whatever the thread count, and progress that still adds up, on the layouts that are read
// (compressed extents, nodatasum files).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "src/fingerprint/fingerprint.h"
#include "src/read/scanned_file.h"
#include "support/btrfs_image.h"

namespace btrdedupe::test {
namespace {

class FingerprintThreadsTest : public BtrfsTest,
                               public ::testing::WithParamInterface<const char*> {
 protected:
  ScanResult scan_layout() {
    build_layout(GetParam(), "l");
    auto scan = scan_tree(path("l"), {});
    EXPECT_TRUE(scan.ok()) << scan.error().message();
    return scan.ok() ? std::move(*scan) : ScanResult{};
  }

  // Fingerprints from a cold cache, so every run really reads the data it sums.
  FingerprintResult run(const ScanResult& scan, unsigned threads,
                        const std::function<void(uint64_t)>& on_progress = {}) {
    std::string why;
    EXPECT_TRUE(fs().remount(&why)) << why;
    auto fp = fingerprint(scan, on_progress, nullptr, threads);
    EXPECT_TRUE(fp.ok()) << fp.error().message();
    return fp.ok() ? std::move(*fp) : FingerprintResult{};
  }
};

TEST_P(FingerprintThreadsTest, SameSumsAndCountsAtOneTwoAndFourThreads) {
  const ScanResult scan = scan_layout();
  ASSERT_FALSE(scan.files.empty());
  const FingerprintResult one = run(scan, 1);
  // The comparison means something only if data was read and summed.
  EXPECT_GT(one.stats.bytes_read, 4u << 20);
  EXPECT_EQ(one.stats.read_errors, 0u);
  size_t complete = 0;
  for (size_t i = 0; i < one.files.size(); ++i)
    complete += one.files[i].sectors() > 0 && one.files[i].complete();
  EXPECT_GE(complete, 8u);  // both layouts: 4 names on each side

  for (unsigned threads : {2u, 4u}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const FingerprintResult many = run(scan, threads);
    ASSERT_EQ(many.files.size(), one.files.size());
    for (size_t i = 0; i < one.files.size(); ++i) {
      EXPECT_TRUE(std::ranges::equal(many.files[i].sums, one.files[i].sums))
          << relative_path(scan, scan.files[i]);
      EXPECT_TRUE(std::ranges::equal(many.files[i].known, one.files[i].known))
          << relative_path(scan, scan.files[i]);
    }
    EXPECT_EQ(many.stats.extents_read, one.stats.extents_read);
    EXPECT_EQ(many.stats.bytes_read, one.stats.bytes_read);
    EXPECT_EQ(many.stats.extents_from_csums, one.stats.extents_from_csums);
    EXPECT_EQ(many.stats.bytes_from_csums, one.stats.bytes_from_csums);
    EXPECT_EQ(many.stats.csum_searches, one.stats.csum_searches);
    EXPECT_EQ(many.stats.read_errors, one.stats.read_errors);
    EXPECT_EQ(many.stats.errors, one.stats.errors);
  }
}

TEST_P(FingerprintThreadsTest, ProgressRisesToTheUniqueBytesFromTheCallingThread) {
  const ScanResult scan = scan_layout();
  const auto caller = std::this_thread::get_id();
  std::vector<uint64_t> seen;
  bool other_thread = false;
  const FingerprintResult fp = run(scan, 4, [&](uint64_t done) {
    other_thread |= std::this_thread::get_id() != caller;
    seen.push_back(done);
  });
  EXPECT_GT(fp.stats.bytes_read, 0u);
  EXPECT_FALSE(other_thread);
  ASSERT_FALSE(seen.empty());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LE(seen[i - 1], seen[i]) << "call " << i;
  // Every extent counts once, read or not: the total is the distinct data, each extent
  // rounded up to whole sectors.
  const auto sharing = summarize_sharing(scan.extents);
  EXPECT_GE(seen.back(), sharing.unique_bytes);
  EXPECT_LT(seen.back(), sharing.unique_bytes + sharing.physical_extents * scan.fs.sectorsize);
}

INSTANTIATE_TEST_SUITE_P(ReadLayouts, FingerprintThreadsTest,
                         ::testing::Values("compressed", "nodatacow"));

}  // namespace
}  // namespace btrdedupe::test
