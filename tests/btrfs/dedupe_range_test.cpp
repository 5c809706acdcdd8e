// FIDEDUPERANGE through btrfs::dedupe_range: what the kernel really shares and reports.
#include "btrfs/dedupe_range.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/kernel_test_util.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// Does file offset `at` of a and of b map to the same disk byte?
bool same_physical_at(const std::string& a, const std::string& b, uint64_t at) {
  auto find = [at](const std::vector<btrfs::FiemapExtent>& map) -> const btrfs::FiemapExtent* {
    for (const auto& e : map)
      if (e.logical <= at && at < e.logical + e.length) return &e;
    return nullptr;
  };
  const auto map_a = extents_of(a), map_b = extents_of(b);
  const auto *ea = find(map_a), *eb = find(map_b);
  if (!ea || !eb || ea->physical == 0) return false;
  return ea->physical + (at - ea->logical) == eb->physical + (at - eb->logical);
}

bool any_shared(const std::string& file) {
  for (const auto& e : extents_of(file))
    if (e.shared()) return true;
  return false;
}

bool all_shared(const std::string& file) {
  const auto map = extents_of(file);
  if (map.empty()) return false;
  for (const auto& e : map)
    if (!e.shared()) return false;
  return true;
}

class DedupeRangeTest : public BtrfsTest {
 protected:
  // A random file of `size` bytes and an unshared copy of it.
  void equal_files(const std::string& a, const std::string& b, uint64_t size) {
    sh("cd " + shell_quote(path("")) + " && head -c " + std::to_string(size) +
       " /dev/urandom > " + a + " && cp --reflink=never " + a + " " + b + " && sync");
    ASSERT_FALSE(any_shared(path(a)));
  }

  btrfs::DedupeCall dedupe(const std::string& src, uint64_t offset, uint64_t length,
                           const std::string& dst, uint64_t dst_offset = 0,
                           int dst_flags = O_RDWR) {
    auto in = open_or_fail(path(src));
    auto out = open_or_fail(path(dst), dst_flags);
    const btrfs::DedupeDestination dest{out.get(), dst_offset};
    auto call = btrfs::dedupe_range(in.get(), offset, length, std::span(&dest, 1));
    EXPECT_TRUE(call.ok()) << call.error().message();
    if (!call.ok()) return {};
    EXPECT_EQ(call->outcomes.size(), 1u);
    return std::move(*call);
  }
};

TEST_F(DedupeRangeTest, EqualFilesBecomeSharedWithoutChangingContentOrMtime) {
  equal_files("a", "b", MiB);
  const std::string digest = sha256_of(path("b"));
  const struct stat before = stat_or_fail(path("b"));

  const auto call = dedupe("a", 0, MiB, "b");
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.requested_length, MiB);
  EXPECT_EQ(call.issued_length, MiB);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].error, 0);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, MiB);

  EXPECT_TRUE(all_shared(path("a")));
  EXPECT_TRUE(all_shared(path("b")));
  for (uint64_t at = 0; at < MiB; at += 128 * KiB)
    EXPECT_TRUE(same_physical_at(path("a"), path("b"), at)) << "at " << at;
  EXPECT_EQ(sha256_of(path("b")), digest);
  EXPECT_EQ(sha256_of(path("a")), digest);
  const struct stat after = stat_or_fail(path("b"));
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

TEST_F(DedupeRangeTest, DifferentFilesDifferAndShareNothing) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 1048576 /dev/urandom > a && head -c 1048576 /dev/urandom > b && sync");
  const std::string digest = sha256_of(path("b"));
  const auto call = dedupe("a", 0, MiB, "b");
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Differs);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, 0u);
  EXPECT_FALSE(any_shared(path("a")));
  EXPECT_FALSE(any_shared(path("b")));
  EXPECT_FALSE(same_physical_at(path("a"), path("b"), 0));
  EXPECT_EQ(sha256_of(path("b")), digest);
}

TEST_F(DedupeRangeTest, At127DestinationsItWorksAndBeyondItIsEINVAL) {
  sh("cd " + shell_quote(path("")) + " && head -c 65536 /dev/urandom > src" +
     " && for i in $(seq 1 130); do cp --reflink=never src c$i; done && sync");
  auto src = open_or_fail(path("src"));
  std::vector<btrfs::Fd> fds;
  std::vector<btrfs::DedupeDestination> dests;
  for (int i = 1; i <= 130; ++i) {
    fds.push_back(open_or_fail(path("c" + std::to_string(i)), O_RDWR));
    dests.push_back({fds.back().get(), 0});
  }

  auto too_many = btrfs::dedupe_range(src.get(), 0, 65536, std::span(dests).first(128));
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, EINVAL);
  EXPECT_NE(too_many.error().context.find("128 destination"), std::string::npos) << too_many.error().context;
  EXPECT_FALSE(any_shared(path("src")));

  auto call = btrfs::dedupe_range(src.get(), 0, 65536, std::span(dests).first(127));
  ASSERT_TRUE(call.ok()) << call.error().message();
  ASSERT_EQ(call->outcomes.size(), 127u);
  for (size_t i = 0; i < 127; ++i) {
    EXPECT_EQ(call->outcomes[i].status, btrfs::DedupeStatus::Same) << "destination " << i;
    EXPECT_EQ(call->outcomes[i].bytes_deduped, 65536u) << "destination " << i;
  }
  EXPECT_TRUE(same_physical_at(path("src"), path("c1"), 0));
  EXPECT_TRUE(same_physical_at(path("src"), path("c127"), 0));
  EXPECT_FALSE(any_shared(path("c128")));
}

TEST_F(DedupeRangeTest, LengthPastTheSourceEofIsClamped) {
  equal_files("a", "b", MiB);
  const auto call = dedupe("a", 0, 10 * MiB, "b");
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.requested_length, 10 * MiB);
  EXPECT_EQ(call.issued_length, MiB);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, MiB);
  EXPECT_TRUE(same_physical_at(path("a"), path("b"), MiB - 1));
}

TEST_F(DedupeRangeTest, LengthAboveOneGibIsClamped) {
  sh("truncate -s 3G " + shell_quote(path("a")));
  auto in = open_or_fail(path("a"));
  // An invalid destination fd keeps the kernel from comparing 1 GiB of zeroes.
  const btrfs::DedupeDestination dest{-1, 0};
  auto call = btrfs::dedupe_range(in.get(), 0, 3ULL << 30, std::span(&dest, 1));
  ASSERT_TRUE(call.ok()) << call.error().message();
  EXPECT_EQ(call->issued_length, btrfs::kMaxDedupeLength);
  ASSERT_EQ(call->outcomes.size(), 1u);
  EXPECT_EQ(call->outcomes[0].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(call->outcomes[0].error, EBADF);
}

// An invalid destination fd proves no ioctl ran: the kernel would report EBADF for it.
TEST_F(DedupeRangeTest, ZeroLengthIssuesNoCall) {
  equal_files("a", "b", MiB);
  auto in = open_or_fail(path("a"));
  const btrfs::DedupeDestination dest{-1, 0};
  for (const auto& [offset, length] : {std::pair<uint64_t, uint64_t>{0, 0}, {MiB, 4096},
                                       {2 * MiB, 4096}}) {
    auto call = btrfs::dedupe_range(in.get(), offset, length, std::span(&dest, 1));
    ASSERT_TRUE(call.ok()) << call.error().message();
    EXPECT_EQ(call->requested_length, length);
    EXPECT_EQ(call->issued_length, 0u);
    ASSERT_EQ(call->outcomes.size(), 1u);
    EXPECT_EQ(call->outcomes[0].status, btrfs::DedupeStatus::Skipped);
    EXPECT_EQ(call->outcomes[0].bytes_deduped, 0u);
  }
}

TEST_F(DedupeRangeTest, UnalignedTailToEofOfBothIsSharedWhole) {
  const uint64_t size = MiB + 1000;
  equal_files("a", "b", size);
  const auto call = dedupe("a", 0, size, "b");
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.issued_length, size);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, size);
  EXPECT_TRUE(same_physical_at(path("a"), path("b"), size - 1));
  EXPECT_TRUE(all_shared(path("b")));
}

// Not at EOF: the kernel shares only whole blocks yet reports the whole length (measured);
// dedupe_range reports what was shared.
TEST_F(DedupeRangeTest, UnalignedLengthNotAtEofIsRoundedDownToABlock) {
  equal_files("a", "b", 2 * MiB);
  const auto call = dedupe("a", 0, MiB + 1000, "b");
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.issued_length, MiB + 1000);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, MiB);
  EXPECT_TRUE(same_physical_at(path("a"), path("b"), MiB - 1));
  EXPECT_FALSE(same_physical_at(path("a"), path("b"), MiB));

  // Under one block: SAME, and nothing shared.
  equal_files("c", "d", 2 * MiB);
  const auto tiny = dedupe("c", 0, 1000, "d");
  ASSERT_EQ(tiny.outcomes.size(), 1u);
  EXPECT_EQ(tiny.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(tiny.outcomes[0].bytes_deduped, 0u);
  EXPECT_FALSE(any_shared(path("d")));
}

// EOF of the source alone is not enough: the destination must end there too.
TEST_F(DedupeRangeTest, UnalignedTailAtSourceEofOnlyIsRoundedDown) {
  equal_files("long", "long2", 2 * MiB);
  sh("head -c " + std::to_string(MiB + 1000) + " " + shell_quote(path("long")) + " > " +
     shell_quote(path("short")) + " && sync");
  const auto call = dedupe("short", 0, MiB + 1000, "long2");
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, MiB);
  EXPECT_TRUE(same_physical_at(path("short"), path("long2"), MiB - 1));
  EXPECT_FALSE(same_physical_at(path("short"), path("long2"), MiB));
}

TEST_F(DedupeRangeTest, UnalignedOffsetIsEINVALForThatDestination) {
  equal_files("a", "b", MiB);
  const auto dst_unaligned = dedupe("a", 4096, 8192, "b", 4096 + 1000);
  ASSERT_EQ(dst_unaligned.outcomes.size(), 1u);
  EXPECT_EQ(dst_unaligned.outcomes[0].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(dst_unaligned.outcomes[0].error, EINVAL);
  const auto src_unaligned = dedupe("a", 1000, 8192, "b", 1000);
  ASSERT_EQ(src_unaligned.outcomes.size(), 1u);
  EXPECT_EQ(src_unaligned.outcomes[0].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(src_unaligned.outcomes[0].error, EINVAL);
  EXPECT_FALSE(any_shared(path("b")));
}

TEST_F(DedupeRangeTest, ReadOnlyDestinationFdWorksAsRoot) {
  equal_files("a", "b", MiB);
  const auto call = dedupe("a", 0, MiB, "b", 0, O_RDONLY);
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, MiB);
  EXPECT_TRUE(same_physical_at(path("a"), path("b"), 0));
}

TEST_F(DedupeRangeTest, DestinationInAReadOnlySnapshotIsDeduped) {
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume create sv" +
     " && head -c 1048576 /dev/urandom > sv/f && cp --reflink=never sv/f g && sync" +
     " && btrfs -q subvolume snapshot -r sv snap && sync");
  ASSERT_FALSE(same_physical_at(path("g"), path("snap/f"), 0));
  // It cannot be opened for writing ...
  EXPECT_FALSE(btrfs::Fd::open(path("snap/f"), O_RDWR).ok());
  const std::string digest = sha256_of(path("snap/f"));

  // ... yet a read-only fd of it is a valid destination, and btrfs dedupes into it.
  const auto call = dedupe("g", 0, MiB, "snap/f", 0, O_RDONLY);
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call.outcomes[0].bytes_deduped, MiB);
  EXPECT_TRUE(same_physical_at(path("g"), path("snap/f"), 0));
  EXPECT_EQ(sha256_of(path("snap/f")), digest);
  EXPECT_NE(sh("btrfs property get -ts " + shell_quote(path("snap")) + " ro").find("ro=true"),
            std::string::npos);
}

TEST_F(DedupeRangeTest, NodatacowAgainstCowIsEINVALEitherWay) {
  sh("cd " + shell_quote(path("")) + " && touch n && chattr +C n" +
     " && head -c 1048576 /dev/urandom >> n && cp --reflink=never n cow" +
     " && touch n2 && chattr +C n2 && cat n >> n2 && sync");
  // lsattr's first field is the attribute list; 'C' is nodatacow.
  const auto attrs = [this](const std::string& f) {
    const std::string out = sh("lsattr " + shell_quote(path(f)));
    return out.substr(0, out.find(' '));
  };
  ASSERT_EQ(attrs("cow").find('C'), std::string::npos) << attrs("cow");
  ASSERT_NE(attrs("n").find('C'), std::string::npos) << attrs("n");
  ASSERT_NE(attrs("n2").find('C'), std::string::npos) << attrs("n2");

  const auto nocow_src = dedupe("n", 0, MiB, "cow");
  ASSERT_EQ(nocow_src.outcomes.size(), 1u);
  EXPECT_EQ(nocow_src.outcomes[0].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(nocow_src.outcomes[0].error, EINVAL);

  const auto cow_src = dedupe("cow", 0, MiB, "n");
  ASSERT_EQ(cow_src.outcomes.size(), 1u);
  EXPECT_EQ(cow_src.outcomes[0].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(cow_src.outcomes[0].error, EINVAL);
  EXPECT_FALSE(any_shared(path("cow")));

  // Two nodatacow files are fine together.
  const auto both = dedupe("n", 0, MiB, "n2");
  ASSERT_EQ(both.outcomes.size(), 1u);
  EXPECT_EQ(both.outcomes[0].status, btrfs::DedupeStatus::Same);
  EXPECT_TRUE(same_physical_at(path("n"), path("n2"), 0));
}

TEST_F(DedupeRangeTest, OutcomesFollowTheDestinationsOrder) {
  equal_files("a", "same", MiB);
  sh("cd " + shell_quote(path("")) + " && head -c 1048576 /dev/urandom > other && sync");
  auto in = open_or_fail(path("a"));
  auto same = open_or_fail(path("same"), O_RDWR);
  auto other = open_or_fail(path("other"), O_RDWR);
  const std::vector<btrfs::DedupeDestination> dests{
      {other.get(), 0}, {same.get(), 0}, {same.get(), 1000}};
  auto call = btrfs::dedupe_range(in.get(), 0, 64 * KiB, dests);
  ASSERT_TRUE(call.ok()) << call.error().message();
  ASSERT_EQ(call->outcomes.size(), 3u);
  EXPECT_EQ(call->outcomes[0].status, btrfs::DedupeStatus::Differs);
  EXPECT_EQ(call->outcomes[1].status, btrfs::DedupeStatus::Same);
  EXPECT_EQ(call->outcomes[1].bytes_deduped, 64 * KiB);
  EXPECT_EQ(call->outcomes[2].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(call->outcomes[2].error, EINVAL);
}

// Measured: a source not open for reading fails the whole call with EINVAL.
TEST_F(DedupeRangeTest, WholeCallFailureIsAnErrorNamingTheSource) {
  equal_files("a", "b", MiB);
  auto in = open_or_fail(path("a"), O_WRONLY);
  auto out = open_or_fail(path("b"), O_RDWR);
  const btrfs::DedupeDestination dest{out.get(), 0};
  auto call = btrfs::dedupe_range(in.get(), 0, MiB, std::span(&dest, 1));
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.error().code, EINVAL);
  EXPECT_NE(call.error().context.find("FIDEDUPERANGE"), std::string::npos);
  EXPECT_NE(call.error().context.find(path("a")), std::string::npos) << call.error().context;
}

TEST_F(DedupeRangeTest, DirectoryDestinationIsEISDIRForThatDestination) {
  equal_files("a", "b", MiB);
  sh("mkdir " + shell_quote(path("dir")));
  const auto call = dedupe("a", 0, MiB, "dir", 0, O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(call.outcomes.size(), 1u);
  EXPECT_EQ(call.outcomes[0].status, btrfs::DedupeStatus::Error);
  EXPECT_EQ(call.outcomes[0].error, EISDIR);
}

}  // namespace
}  // namespace btrdedupe::test
