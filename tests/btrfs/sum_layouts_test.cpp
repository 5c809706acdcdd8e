// The sums the matcher uses are the filesystem's own checksums of the data, on the layouts
// where a wrong file-offset mapping would show (issue #16): large extents written by `cat`,
// bookends after partial overwrites, reflinked sub-ranges (extent_offset != 0), prealloc
// and holes before data, many small extents, compressed and nodatasum files, and a shifted
// `cat` copy of an ext4 image. And no proposed range pairs bytes that differ, even where
// the sums agree by construction (ext4 backup superblocks: src/fingerprint/sector_checksum.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "btrfs/fd.h"
#include "src/match/duplicate_match.h"
#include "src/fingerprint/fingerprint.h"
#include "src/read/scanned_file.h"
#include "src/fingerprint/sum_check.h"
#include "support/btrfs_image.h"

namespace btrdedupe::test {
namespace {

class SumLayoutsTest : public BtrfsTest {
 protected:
  ImageOptions image_options() const override { return {4ULL << 30, {}, ""}; }

  // Two files of zeros written through a pipe, differing in 5 bytes of one sector deep
  // inside one large extent.
  void almost_equal_pair(const std::string& d) {
    const std::string at = std::to_string((20 << 20) + 17 * 4096 + 90);
    sh("cd " + d + " && head -c 40M /dev/zero | cat > x.bin && head -c 40M /dev/zero | cat > y.bin"
       " && printf 'ABCDE' | dd of=x.bin bs=1 seek=" + at + " conv=notrunc status=none"
       " && printf 'abcde' | dd of=y.bin bs=1 seek=" + at + " conv=notrunc status=none");
  }

  // An ext4 image (16 MiB groups: backup superblocks in groups 1, 3, 5, 7, 9) and its copy
  // shifted by 68 KiB, written by `cat` through a pipe, so its free space is written zeros.
  void ext4_images(const std::string& d) {
    sh("cd " + d + " && truncate -s 192M e.img && mkfs.ext4 -q -F -b 4096 -g 4096 e.img"
       " && { head -c 69632 /dev/zero; cat e.img; } | cat > shifted.img");
  }

  void other_layouts(const std::string& d) {
    const std::string c = "cd " + d + " && ";
    sh(c + "head -c 160M /dev/urandom | cat > big.bin");  // extents up to 128 MiB
    // Bookends: an overwrite in the middle of one extent.
    sh(c + "head -c 8M /dev/urandom > bookend.bin && sync -f . && head -c 1M /dev/urandom |"
           " dd of=bookend.bin bs=1M seek=3 conv=notrunc status=none");
    // Reflinked sub-ranges at other offsets, then a partial overwrite of the copy.
    sh(c + "python3 -c \"import os\n"
           "s=os.open('big.bin',os.O_RDONLY); t=os.open('sub.bin',os.O_WRONLY|os.O_CREAT,0o644)\n"
           "os.copy_file_range(s,t,(24<<20)+4096*5,(130<<20)+4096*3,4096*7)\n"
           "os.copy_file_range(s,t,3<<20,(5<<20)+4096,0)\"");
    sh(c + "sync -f . && head -c 64K /dev/urandom | dd of=sub.bin bs=4K seek=100 conv=notrunc"
           " status=none");
    // Prealloc and holes before data, a hole in the middle, a partial last sector.
    sh(c + "fallocate -l 4M holes.bin && head -c 1M /dev/urandom | dd of=holes.bin bs=1M seek=2"
           " conv=notrunc status=none && head -c 1000000 /dev/urandom | dd of=holes.bin bs=1M"
           " seek=10 status=none");
    // Many small extents: 4 KiB written every 8 KiB, each synced.
    sh(c + "python3 -c \"import os\n"
           "f=os.open('many.bin',os.O_WRONLY|os.O_CREAT,0o644)\n"
           "for k in range(300): os.pwrite(f,os.urandom(4096),k*8192); os.fsync(f)\"");
    // Compressed (summed from the data) and nodatasum (no sums at all).
    sh(c + "touch comp.bin && btrfs property set comp.bin compression zstd && for i in $(seq 3000);"
           " do echo line $i of compressible text; done > comp.bin");
    sh(c + "touch nosum.bin && chattr +C nosum.bin && head -c 2M /dev/urandom > nosum.bin");
    sh("sync -f " + d);
  }

  struct Run {
    ScanResult scan;
    FingerprintResult fp;
  };
  Run fingerprint_tree(const std::string& d) {
    Run r;
    auto scan = scan_tree(d, {});
    EXPECT_TRUE(scan.ok()) << scan.error().message();
    if (!scan) return r;
    r.scan = std::move(*scan);
    auto fp = fingerprint(r.scan);
    EXPECT_TRUE(fp.ok()) << fp.error().message();
    if (fp) r.fp = std::move(*fp);
    return r;
  }
};

std::string read_range(const ScanResult& scan, uint32_t file, uint64_t offset, uint64_t length) {
  auto fd = open_scanned_file(scan, scan.files[file], false);
  EXPECT_TRUE(fd.ok());
  std::string out(length, '\0');
  if (!fd) return out;
  const ssize_t n = ::pread(fd->get(), out.data(), length, static_cast<off_t>(offset));
  EXPECT_EQ(n, static_cast<ssize_t>(length));
  return out;
}

void expect_sums_match_data(const ScanResult& scan, const FingerprintResult& fp) {
  const SumCheck check = check_sums(scan, fp);
  EXPECT_TRUE(check.ok()) << summary_line(check);
  for (const auto& m : check.first)
    ADD_FAILURE() << relative_path(scan, scan.files[m.file]) << " offset " << m.offset
                  << ": fingerprint " << m.fingerprint << ", data " << m.data;
  EXPECT_GT(check.sectors_checked, 0u);
}

TEST_F(SumLayoutsTest, SumsEqualTheChecksumsOfTheDataOnEveryLayout) {
  sh("mkdir -p " + path("l"));
  other_layouts(path("l"));
  almost_equal_pair(path("l"));
  ext4_images(path("l"));
  const Run r = fingerprint_tree(path("l"));
  // The layouts are what they claim to be.
  EXPECT_TRUE(std::ranges::any_of(r.scan.extents, [](const FileExtent& e) {
    return e.extent_offset != 0 && e.compression == btrfs::Compression::None;
  }));
  EXPECT_TRUE(std::ranges::any_of(r.scan.extents, [](const FileExtent& e) {
    return e.compression != btrfs::Compression::None;
  }));
  EXPECT_TRUE(std::ranges::any_of(r.scan.extents,
                                  [](const FileExtent& e) { return e.length > (64u << 20); }));
  const SumCheck check = check_sums(r.scan, r.fp);
  EXPECT_GT(check.sectors_without_data, 0u) << summary_line(check);
  EXPECT_GT(check.sectors_nodatasum, 0u) << summary_line(check);
  expect_sums_match_data(r.scan, r.fp);
}

TEST_F(SumLayoutsTest, RangesThatDifferInOneSectorAreNeverProposedAsEqual) {
  sh("mkdir -p " + path("p"));
  almost_equal_pair(path("p"));
  ext4_images(path("p"));
  const Run r = fingerprint_tree(path("p"));
  expect_sums_match_data(r.scan, r.fp);
  const MatchResult m = find_duplicates(r.scan, r.fp, {});
  EXPECT_FALSE(m.groups.empty());
  for (const auto& g : m.groups) {
    const auto& first = g.members.front();
    const std::string want = read_range(r.scan, first.file, first.offset, g.length);
    for (const auto& member : g.members)
      EXPECT_TRUE(read_range(r.scan, member.file, member.offset, g.length) == want)
          << relative_path(r.scan, r.scan.files[member.file]) << " at " << member.offset
          << " differs from " << relative_path(r.scan, r.scan.files[first.file]) << " at "
          << first.offset << " over " << g.length << " bytes";
  }
}

TEST_F(SumLayoutsTest, CheckSumsReportsAWrongSumAndASumOnAHole) {
  sh("cd " + path("") + " && head -c 1M /dev/urandom > f.bin && truncate -s 2M f.bin && sync -f .");
  Run r = fingerprint_tree(path(""));
  ASSERT_EQ(r.scan.files.size(), 1u);
  expect_sums_match_data(r.scan, r.fp);
  r.fp.files.sums(0)[5 * r.scan.fs.csum_size] ^= 1;  // sector 5: a wrong sum
  r.fp.files.known(0)[300] = 1;                      // sector 300: a "sum" in the hole
  const SumCheck check = check_sums(r.scan, r.fp);
  EXPECT_FALSE(check.ok());
  EXPECT_EQ(check.mismatches, 2u) << summary_line(check);
  ASSERT_EQ(check.first.size(), 2u);
  EXPECT_EQ(check.first[0].offset, 5u * 4096);
  EXPECT_EQ(check.first[1].offset, 300u * 4096);
  EXPECT_EQ(check.first[1].data, "none");
  EXPECT_EQ(check.sectors_without_data, 256u);
}

}  // namespace
}  // namespace btrdedupe::test
