// The report's freed space against `btrfs filesystem df` (Data used, after a sync), on
// layouts where sharing and freeing differ: whole copies, half-shared extents (bookends),
// compressed copies and copies a read-only snapshot also holds.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

class FreedSpaceTest : public CliTest {
 protected:
  // Runs -dr --json on d; returns the report, and the change of Data used in *df_freed.
  nlohmann::json dedupe(int64_t* df_freed, const std::string& extra = "") {
    const uint64_t before = data_used();
    std::string out, err;
    const int code = btrdedupe_split("-dr --json " + extra + " " + shell_quote(path("d")), &out,
                                     &err);
    EXPECT_EQ(code, 0) << out << err;
    *df_freed = static_cast<int64_t>(before) - static_cast<int64_t>(data_used());
    return nlohmann::json::parse(out);
  }
  // What -r says -d would free.
  uint64_t would_free() {
    std::string out, err;
    EXPECT_EQ(btrdedupe_split("-r --json " + shell_quote(path("d")), &out, &err), 0) << err;
    return nlohmann::json::parse(out)["totals"]["would_free_bytes"];
  }
};

TEST_F(FreedSpaceTest, WholeCopiesFreeTheirExtents) {
  twins("a", 4 << 20);
  twins("b", (3 << 20) + 100);  // its last extent ends a sector past EOF: still freed whole
  const int64_t copy = (4 << 20) + (3 << 20) + 4096;
  EXPECT_EQ(would_free(), static_cast<uint64_t>(copy));
  int64_t df = 0;
  const auto j = dedupe(&df);
  EXPECT_EQ(df, copy);
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  const auto& space = j["filesystems"][0]["space"];
  EXPECT_EQ(space["allocated_before"], 2 * copy);
  EXPECT_EQ(space["allocated_after"], copy);
  EXPECT_GE(space["freed_extents"], 2);  // writeback under load may split a copy
}

// Read in windows of one file (-B 1), each window's dedupe is measured on its own: the sum
// is still what df moved by, and the space after is the space before less it.
TEST_F(FreedSpaceTest, WindowedRunsAddUpToWhatDfShows) {
  twins("a", 2 << 20);
  twins("b", (1 << 20) + 100);
  int64_t df = 0;
  const auto j = dedupe(&df, "-B 1");
  EXPECT_GT(j["filesystems"][0]["scan"]["windows"], 1);
  EXPECT_EQ(df, (3 << 20) + 4096);
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  const auto& space = j["filesystems"][0]["space"];
  EXPECT_EQ(space["allocated_after"], space["allocated_before"].get<int64_t>() - df);
}

// Each file is 2 MiB of zeros then 2 MiB of its own data, in one extent: the zero halves
// are equal, but sharing them leaves both extents referenced. Nothing is freed, and the
// report says so (it used to call the zero half freed). Written with one O_DIRECT write,
// again when the kernel still split it (buffered writeback under load did).
TEST_F(FreedSpaceTest, SharingHalfAnExtentFreesNothing) {
  const std::string half = "/tmp/btrdedupe-half-" + std::to_string(::getpid());
  sh("mkdir " + shell_quote(path("d")));
  for (const std::string f : {"d/z", "d/w"}) {
    sh("(head -c 2097152 /dev/zero; head -c 2097152 /dev/urandom) > " + shell_quote(half));
    for (int attempt = 0; attempt < 5; ++attempt) {
      sh("rm -f " + shell_quote(path(f)) + " && dd if=" + shell_quote(half) + " of=" +
         shell_quote(path(f)) + " bs=4M oflag=direct status=none && sync");
      if (extent_items(f) == 1) break;
    }
    // Two items, even adjacent ones, would let the zero half free its own.
    ASSERT_EQ(extent_items(f), 1u) << sh("filefrag -v " + shell_quote(path(f)));
  }
  sh("rm -f " + shell_quote(half));
  EXPECT_EQ(would_free(), 0u);
  int64_t df = 0;
  const auto j = dedupe(&df);
  EXPECT_GT(j["totals"]["bytes_deduped"], 0);
  EXPECT_EQ(df, 0);
  EXPECT_EQ(j["totals"]["freed_bytes"], 0);
}

// A read-only snapshot holds the destination's extents too: deduping frees nothing.
TEST_F(FreedSpaceTest, ExtentsASnapshotHoldsAreNotFreed) {
  sh("btrfs subvolume create " + shell_quote(path("d")) + " >/dev/null");
  twins("x", 2 << 20);
  sh("btrfs subvolume snapshot -r " + shell_quote(path("d")) + " " + shell_quote(path("snap")) +
     " >/dev/null && sync");
  int64_t df = 0;
  const auto j = dedupe(&df);  // d alone: the snapshot is outside the scan
  EXPECT_EQ(j["totals"]["bytes_deduped"], 2 << 20);
  EXPECT_EQ(df, 0);
  EXPECT_EQ(j["totals"]["freed_bytes"], 0);
}

// Two pairs, each pair reflinked, the pairs independent: one run puts all four on one
// extent and frees the other pair's.
TEST_F(FreedSpaceTest, GroupsOnTwoPhysicalExtentsConvergeInOneRun) {
  sh("mkdir " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
     " && head -c 4194304 /dev/urandom > a && cp --reflink=always a a.ref"
     " && cp --reflink=never a b && cp --reflink=always b b.ref && sync");
  int64_t df = 0;
  const auto j = dedupe(&df);
  EXPECT_EQ(df, 4 << 20);
  EXPECT_EQ(j["totals"]["freed_bytes"], 4 << 20);
  const auto extents = [&](const char* f) {  // physical offsets, from filefrag
    return sh("filefrag -v " + shell_quote(path(std::string("d/") + f)) +
              " | awk '/^ *[0-9]+:/ {print $4}'");
  };
  EXPECT_EQ(extents("a"), extents("b"));
  EXPECT_EQ(extents("a.ref"), extents("b.ref"));
  EXPECT_EQ(extents("a"), extents("b.ref"));
  std::string out, err;
  EXPECT_EQ(btrdedupe_split("-r --json " + shell_quote(path("d")), &out, &err), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["totals"]["planned_bytes"], 0);  // nothing left
}

class CompressedFreedSpaceTest : public FreedSpaceTest {
  ImageOptions image_options() const override {
    ImageOptions o;
    o.mount_options = "compress-force=zstd";
    return o;
  }
};

// A compressed extent frees its compressed size: what df moves by.
TEST_F(CompressedFreedSpaceTest, CompressedExtentsFreeTheirDiskBytes) {
  sh("mkdir " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
     " && yes 'a line that compresses well, over and over' | head -c 8388608 > t"
     " && cp --reflink=never t t.copy && sync");
  int64_t df = 0;
  const auto j = dedupe(&df);
  EXPECT_GT(df, 0);
  EXPECT_LT(df, 2 << 20);  // compressed: far less than the 8 MiB shared
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
}

}  // namespace
}  // namespace btrdedupe::test
