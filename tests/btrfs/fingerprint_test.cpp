// Read-once fingerprints on real layouts: sums from the csum tree where they exist, from
// data (with the filesystem's algorithm) where they do not, equal for equal content.
#include "src/fingerprint/fingerprint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "src/read/scanned_file.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

struct Fingerprinted {
  ScanResult scan;
  FingerprintResult fp;
  std::map<std::string, size_t> index;  // path -> file index

  FileSumsView sums(const std::string& p) const {
    auto it = index.find(p);
    EXPECT_NE(it, index.end()) << "no file " << p;
    return it == index.end() ? FileSumsView{} : fp.files[it->second];
  }
};

class FingerprintTest : public BtrfsTest {
 protected:
  Fingerprinted run(const std::string& rel) {
    Fingerprinted out;
    auto scan = scan_tree(path(rel), {});
    EXPECT_TRUE(scan.ok()) << scan.error().message();
    if (!scan.ok()) return out;
    out.scan = std::move(*scan);
    auto fp = fingerprint(out.scan);
    EXPECT_TRUE(fp.ok()) << fp.error().message();
    if (fp.ok()) out.fp = std::move(*fp);
    for (size_t i = 0; i < out.scan.files.size(); ++i) out.index[relative_path(out.scan, out.scan.files[i])] = i;
    return out;
  }
};

void expect_same_content(const Fingerprinted& f, const std::string& a, const std::string& b) {
  const FileSumsView x = f.sums(a), y = f.sums(b);
  EXPECT_TRUE(x.complete()) << a;
  EXPECT_TRUE(y.complete()) << b;
  EXPECT_FALSE(x.known.empty()) << a;
  EXPECT_TRUE(std::ranges::equal(x.sums, y.sums)) << a << " vs " << b;
}

TEST_F(FingerprintTest, TwoCopiesFromCsumsAloneWithoutReadingData) {
  build_layout("two-copies", "tc");
  const auto f = run("tc");
  size_t compared = 0;
  for (const auto& file : f.scan.files) {
    const std::string rel = relative_path(f.scan, file);
    if (rel.rfind("a/", 0) != 0 || file.size <= 2048) continue;
    expect_same_content(f, rel, "b/" + rel.substr(2));
    ++compared;
  }
  EXPECT_EQ(compared, 48u);  // 60 files less 10 tiny, 1 dup-tiny and 1 empty
  EXPECT_EQ(f.fp.stats.bytes_read, 0u);
  EXPECT_EQ(f.fp.stats.extents_read, 0u);
  EXPECT_EQ(f.fp.stats.extents_from_csums, summarize_sharing(f.scan.extents).physical_extents);
  // Different content, different sums.
  EXPECT_FALSE(std::ranges::equal(f.sums("a/src/src-01.c").sums, f.sums("a/src/src-02.c").sums));
}

TEST_F(FingerprintTest, SnapshotsCostOneLookupPerPhysicalExtent) {
  build_layout("snapshots", "s");
  const auto f = run("s");
  // snap-ro's files fold into vol's (identical extents); snap-rw's stay (writable).
  EXPECT_EQ(f.index.count("snap-ro/data/big.bin"), 0u);
  EXPECT_TRUE(f.scan.files[f.index.at("vol/data/big.bin")].readonly_alias);
  expect_same_content(f, "vol/data/big.bin", "snap-rw/data/big.bin");
  expect_same_content(f, "vol/data/big.bin", "snap-rw/added-copy-of-big.bin");
  const auto sharing = summarize_sharing(f.scan.extents);
  EXPECT_GT(sharing.shared_bytes, 0u);
  EXPECT_EQ(f.fp.stats.extents_from_csums, sharing.physical_extents);
  EXPECT_EQ(f.fp.stats.bytes_from_csums, sharing.unique_bytes);
  EXPECT_EQ(f.fp.stats.bytes_read, 0u);
}

TEST_F(FingerprintTest, LayoutDoesNotMatterOnlyContent) {
  build_layout("layout-differs", "ld");
  const auto f = run("ld");
  expect_same_content(f, "one", "two");
}

TEST_F(FingerprintTest, NodatasumFilesAreReadAndSummedLikeTheTree) {
  build_layout("nodatacow", "n");
  const auto f = run("n");
  for (const std::string name : {"a.bin", "b.bin", "c.bin", "a-again.bin"})
    expect_same_content(f, "nocow/" + name, "cow/" + name);
  // Exactly the nocow files' blocks were read: 4 MiB + (2 MiB + 300 B) + 64 KiB + 4 MiB.
  EXPECT_EQ(f.fp.stats.bytes_read, (4u << 20) + (2u << 20) + 300 + (64u << 10) + (4u << 20));
  // Said as read for want of checksums (whole sectors: the 300 bytes' take one).
  EXPECT_EQ(f.fp.stats.read_for.without_checksums,
            (4u << 20) + (2u << 20) + 4096 + (64u << 10) + (4u << 20));
  EXPECT_EQ(f.fp.stats.read_for.twin_groups + f.fp.stats.read_for.compressed_without_twin, 0u);
  EXPECT_EQ(f.fp.stats.read_errors, 0u);
}

class CompressedFingerprintTest : public FingerprintTest,
                                  public ::testing::WithParamInterface<const char*> {
  ImageOptions image_options() const override { return {1ULL << 30, {"--csum", GetParam()}, ""}; }
};

TEST_P(CompressedFingerprintTest, CompressedAndPlainCopiesGetEqualSums) {
  build_layout("compressed", "c");
  const auto f = run("c");
  for (const std::string name : {"hex-4m.txt", "b64-1m.txt", "hex-130k.txt", "random-1m.bin"})
    expect_same_content(f, "zstd/" + name, "plain/" + name);
  // Only compressed extents were read: at most the zstd files' logical size, none of plain/.
  EXPECT_GT(f.fp.stats.bytes_read, 0u);
  EXPECT_LE(f.fp.stats.bytes_read, (4u << 20) + (1u << 20) + (130u << 10));
}

INSTANTIATE_TEST_SUITE_P(EveryCsumType, CompressedFingerprintTest,
                         ::testing::Values("crc32c", "xxhash", "sha256", "blake2"));

}  // namespace
}  // namespace btrdedupe::test

namespace btrdedupe::test {
namespace {

// Copies written through the same compression hold the same compressed extents: one is
// read for its sums, its twin takes them (no read); a copy written otherwise (lzo, plain)
// is read or taken from the csum tree as before, and every copy gets the same sums.
TEST_F(FingerprintTest, ACompressedTwinTakesTheSumsOfTheCopyThatIsRead) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir z1 z2 lzo plain && btrfs property set z1 compression zstd"
     " && btrfs property set z2 compression zstd && btrfs property set lzo compression lzo"
     " && head -c 1600000 /dev/urandom | od -An -tx1 | head -c 3146728 > t"
     " && for d in z1 z2 lzo plain; do cp --reflink=never t $d/f; done"
     " && head -c 800000 /dev/urandom | od -An -tx1 | head -c 1048576 > z1/g && rm t && sync");
  const auto f = run("");
  for (const std::string other : {"z2/f", "lzo/f", "plain/f"}) expect_same_content(f, "z1/f", other);
  // The compressed extents of a file (its tail of 1000 bytes is stored plain).
  auto compressed = [&](const std::string& name) {
    std::pair<uint64_t, uint64_t> extents_bytes{0, 0};
    for (const FileExtent& e : f.scan.extents)
      if (e.file == f.index.at(name) && e.compression != btrfs::Compression::None) {
        ++extents_bytes.first;
        extents_bytes.second += (e.extent_offset + e.length + 4095) / 4096 * 4096;
      }
    return extents_bytes;
  };
  const auto [twin_extents, twin_bytes] = compressed("z2/f");
  EXPECT_GT(twin_extents, 10u);  // 3 MiB in compressed extents of at most 128 KiB
  EXPECT_EQ(compressed("z1/f"), compressed("z2/f"));
  EXPECT_EQ(f.fp.stats.extents_from_twins, twin_extents);
  EXPECT_EQ(f.fp.stats.bytes_from_twins, twin_bytes);
  // Read: one of the zstd copies, the lzo copy and the file without a twin; not both.
  EXPECT_EQ(f.fp.stats.bytes_read,
            twin_bytes + compressed("lzo/f").second + compressed("z1/g").second);
  // And the report says why.
  EXPECT_EQ(f.fp.stats.read_for.twin_groups, twin_bytes);
  EXPECT_EQ(f.fp.stats.read_for.compressed_without_twin,
            compressed("lzo/f").second + compressed("z1/g").second);
  EXPECT_EQ(f.fp.stats.read_for.twin_remainders, 0u);
  EXPECT_EQ(f.fp.stats.read_for.without_checksums, 0u);
  EXPECT_EQ(f.fp.stats.read_errors, 0u);
}

// Every way a btrfs stores the same bytes fingerprints alike: zlib, lzo and plain copies,
// and copies recompressed in place by defrag (zstd, which may make twins of the zstd copy,
// and lzo), so none is lost to the twins' shortcut.
TEST_F(FingerprintTest, EveryKindOfCompressionFingerprintsAlike) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir zstd zlib lzo plain re-zstd re-lzo"
     " && for a in zstd zlib lzo; do btrfs property set $a compression $a; done"
     " && head -c 1200000 /dev/urandom | od -An -tx1 | head -c 2097152 > t"
     " && for d in zstd zlib lzo plain re-zstd re-lzo; do cp --reflink=never t $d/f; done && rm t"
     " && sync && btrfs filesystem defragment -czstd re-zstd/f"
     " && btrfs filesystem defragment -clzo re-lzo/f && sync");
  const auto f = run("");
  for (const std::string other : {"zlib/f", "lzo/f", "plain/f", "re-zstd/f", "re-lzo/f"})
    expect_same_content(f, "zstd/f", other);
  // The defragmented copies were recompressed, not left plain.
  for (const std::string name : {"re-zstd/f", "re-lzo/f"}) {
    bool compressed = false;
    for (const FileExtent& e : f.scan.extents)
      compressed |= e.file == f.index.at(name) && e.compression != btrfs::Compression::None;
    EXPECT_TRUE(compressed) << name;
  }
  const auto& why = f.fp.stats.read_for;
  EXPECT_GT(why.compressed_without_twin, 0u);  // zlib and lzo at least
  EXPECT_EQ(why.without_checksums, 0u);
  EXPECT_EQ(f.fp.stats.read_errors, 0u);
}

}  // namespace
}  // namespace btrdedupe::test
