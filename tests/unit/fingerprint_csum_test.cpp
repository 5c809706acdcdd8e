// Fingerprints from csum items, without a disk: the csum tree is a MemoryTreeSource and the
// files a synthetic scan whose sector "checksums" are content ids.
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <map>

#include "src/fingerprint/fingerprint.h"
#include "tests/support/memory_tree_source.h"
#include "tests/unit/synthetic_csums.h"
#include "tests/unit/synthetic_fs.h"

namespace btrdedupe {
namespace {

using test::MemoryTreeSource;


void expect_same_sums(const FileSumsTable& got, const FileSumsTable& want, size_t files) {
  ASSERT_EQ(got.size(), files);
  for (size_t f = 0; f < files; ++f) {
    const FileSumsView a = got[f], b = want[f];
    ASSERT_EQ(a.sectors(), b.sectors()) << "file " << f;
    EXPECT_TRUE(std::equal(a.known.begin(), a.known.end(), b.known.begin())) << "file " << f;
    EXPECT_TRUE(std::equal(a.sums.begin(), a.sums.end(), b.sums.begin())) << "file " << f;
  }
}

// Whole extents, a reflinked copy and a file referencing the middle of another's extent:
// each file's sums are its sectors' sums, and each physical extent is looked up once.
TEST(FingerprintFromCsums, EachFileGetsTheSumsOfTheSectorsItReferences) {
  SyntheticFs fs;
  fs.add_file(4 * kSector, seq(10, 4));                    // one extent
  fs.add_file(5 * kSector, seq(20, 5), {2, 3});            // two extents
  fs.add_file(4 * kSector, seq(10, 4), {}, 0);             // a reflink of file 0
  const uint32_t mid = fs.add_file(2 * kSector, {21, 22}, {0});
  FileExtent piece = fs.scan.extents[1];  // file 1's first extent: sectors 20, 21 ...
  piece.file = mid;
  piece.extent_offset = kSector;  // ... from its second sector
  piece.length = kSector;
  fs.scan.extents.push_back(piece);
  FileExtent next = fs.scan.extents[2];  // and the first sector of file 1's second extent
  next.file = mid;
  next.file_offset = kSector;
  next.length = kSector;
  fs.scan.extents.push_back(next);
  sort_by_physical_identity(fs.scan.extents);
  MemoryTreeSource tree;
  add_csum_items(tree, fs, /*split=*/true);

  auto fp = fingerprint(fs.scan, {}, nullptr, 1, &tree);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  expect_same_sums(fp->files, fs.fp.files, fs.scan.files.size());
  EXPECT_EQ(fp->stats.extents_from_csums, 3u);  // three physical extents, however shared
  EXPECT_EQ(fp->stats.bytes_from_csums, 9u * kSector);
  EXPECT_EQ(fp->stats.extents_read, 0u);
}

// `wanted` limits the lookups to those files' extents; the others get no sums at all.
TEST(FingerprintFromCsums, UnwantedFilesGetNoSums) {
  SyntheticFs fs;
  fs.add_file(3 * kSector, seq(1, 3));
  fs.add_file(2 * kSector, seq(7, 2));
  MemoryTreeSource tree;
  add_csum_items(tree, fs);
  const std::vector<bool> wanted = {false, true};
  auto fp = fingerprint(fs.scan, {}, &wanted, 1, &tree);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  EXPECT_EQ(fp->files[0].sectors(), 0u);
  EXPECT_EQ(fp->files[1].sectors(), 2u);
  EXPECT_TRUE(fp->files[1].complete());
  EXPECT_EQ(fp->stats.extents_from_csums, 1u);
}

// An extent the csum tree has no sums for must be read from its file; here the file does
// not exist, so the read fails: counted, its sectors stay unknown, the other file is done.
TEST(FingerprintFromCsums, AnExtentWithoutSumsIsReadAndAFailedReadLeavesItUnknown) {
  SyntheticFs fs;
  fs.add_file(2 * kSector, seq(1, 2));
  fs.add_file(2 * kSector, seq(5, 2));
  MemoryTreeSource tree;
  SyntheticFs first_only;
  first_only.add_file(2 * kSector, seq(1, 2));
  add_csum_items(tree, first_only);  // the same disk address as fs's first extent
  auto fp = fingerprint(fs.scan, {}, nullptr, 1, &tree);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  EXPECT_TRUE(fp->files[0].complete());
  EXPECT_FALSE(fp->files[1].known[0] || fp->files[1].known[1]);
  EXPECT_EQ(fp->stats.extents_from_csums, 1u);
  EXPECT_EQ(fp->stats.read_errors, 1u);
  ASSERT_FALSE(fp->stats.errors.empty());
  EXPECT_NE(fp->stats.errors.front().find("f1"), std::string::npos) << fp->stats.errors.front();
}

}  // namespace
}  // namespace btrdedupe
