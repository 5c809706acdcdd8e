// Holes are content: identical sparse files are whole-file duplicates, and a dedupe shares
// their data ranges (never their holes) and frees the copy's data on disk.
#include <gtest/gtest.h>

#include <unistd.h>

#include <iostream>
#include <regex>
#include <sstream>

#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

class SparseDedupeTest : public CliTest {
 protected:
  // d/<name>: a file of `size` bytes holding piece k (random bytes, the same for every file
  // made with the same pieces) at offset pieces[k].first (a multiple of 4096),
  // pieces[k].second bytes long; the rest is a hole. Pieces are written with dd
  // conv=notrunc into a truncated file.
  void sparse(const std::string& name, uint64_t size,
              const std::vector<std::pair<uint64_t, uint64_t>>& pieces) {
    std::string cmd = "mkdir -p " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
                      " && truncate -s " + std::to_string(size) + " " + shell_quote(name);
    for (size_t k = 0; k < pieces.size(); ++k) {
      const std::string piece = shell_quote(work("piece-" + std::to_string(k)));
      cmd += " && { test -e " + piece + " || head -c " + std::to_string(pieces[k].second) +
             " /dev/urandom > " + piece + "; }";
      cmd += " && dd if=" + piece + " of=" + shell_quote(name) + " bs=4096 seek=" +
             std::to_string(pieces[k].first / 4096) + " conv=notrunc status=none";
    }
    sh(cmd + " && sync");
  }
  // Outside the image: the random pieces, so writing them does not change its figures.
  std::string work(const std::string& name) {
    const std::string dir = "/tmp/btrdedupe-sparse-test-" + std::to_string(::getpid());
    sh("mkdir -p " + shell_quote(dir));
    return dir + "/" + name;
  }
  void TearDown() override {
    sh("rm -rf " + shell_quote("/tmp/btrdedupe-sparse-test-" + std::to_string(::getpid())));
    CliTest::TearDown();
  }
  // Every extent line of `filefrag -v` of d/<name> says "shared".
  bool all_data_shared(const std::string& name) {
    std::istringstream lines(sh("filefrag -v " + shell_quote(path("d/" + name))));
    int extents = 0;
    for (std::string line; std::getline(lines, line);) {
      if (!std::regex_search(line, std::regex("^ *[0-9]+: "))) continue;
      ++extents;
      if (line.find("shared") == std::string::npos) return false;
    }
    return extents > 0;
  }
  // The whole-file group of two sparse twins, deduped: data shared, holes left, `freed`
  // bytes of Data used given back.
  void expect_twins_deduped(uint64_t freed) {
    const auto before = state("d");
    const uint64_t used_before = data_used();
    const auto r = btrdedupe("-dr " + shell_quote(path("d")));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Found 1 whole-file and 0 partial duplicate groups"),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(all_data_shared("a")) << sh("filefrag -v " + shell_quote(path("d/a")));
    EXPECT_TRUE(all_data_shared("b")) << sh("filefrag -v " + shell_quote(path("d/b")));
    EXPECT_EQ(state("d"), before);  // contents and mtimes
    EXPECT_EQ(used_before - data_used(), freed);
    // The report's freed figure is what df moved by.
    EXPECT_NE(r.output.find("  freed:          " + std::to_string(freed) + " of disk space"),
              std::string::npos)
        << r.output;
    std::cout << "Data used: " << used_before << " before, " << used_before - freed
              << " after\n";
  }
};

// 64 KiB of data, a hole, 50,000 bytes of data (13 sectors on disk): too short for a
// partial match of -b 128K, so before holes were content they were not matched at all.
TEST_F(SparseDedupeTest, SmallSparseTwinsAreOneWholeFileGroupAndShareTheirData) {
  const std::vector<std::pair<uint64_t, uint64_t>> pieces{{0, 65536}, {262144, 50000}};
  sparse("a", 262144 + 50000, pieces);
  sparse("b", 262144 + 50000, pieces);
  expect_twins_deduped(65536 + 13 * 4096);
  // The hole is still a hole in both: 2 extents each (or the data split further, never
  // an extent over the hole).
  for (const std::string f : {"a", "b"})
    EXPECT_EQ(sh("stat -c %b " + shell_quote(path("d/" + f))), "232\n") << f;  // 116 KiB
}

// 1 MiB of data, a 7 MiB hole, 1 MiB of data: before, two partial groups of 1 MiB.
TEST_F(SparseDedupeTest, LargeSparseTwinsAreOneWholeFileGroupAndShareTheirData) {
  const std::vector<std::pair<uint64_t, uint64_t>> pieces{{0, 1 << 20}, {8 << 20, 1 << 20}};
  sparse("a", 9 << 20, pieces);
  sparse("b", 9 << 20, pieces);
  expect_twins_deduped(2 << 20);
}

// A prealloc (unwritten) range reads as zeros like a hole, and is one for matching: a file
// whose gap was fallocated is a whole-file duplicate of the one with a hole there.
TEST_F(SparseDedupeTest, APreallocRangeCountsAsAHole) {
  const std::vector<std::pair<uint64_t, uint64_t>> pieces{{0, 65536}, {262144, 50000}};
  sparse("a", 262144 + 50000, pieces);
  sparse("b", 262144 + 50000, pieces);
  sh("cd " + shell_quote(path("d")) + " && fallocate -o 65536 -l 196608 b && sync");
  const auto r = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Found 1 whole-file and 0 partial duplicate groups"), std::string::npos)
      << r.output;
  EXPECT_NE(sh("filefrag -v " + shell_quote(path("d/b"))).find("unwritten"), std::string::npos);
}

// Same data, the hole elsewhere: not the same file.
TEST_F(SparseDedupeTest, SameDataWithTheHoleElsewhereIsNotAWholeFileDuplicate) {
  sparse("a", 262144 + 50000, {{0, 65536}, {262144, 50000}});
  sh("cd " + shell_quote(path("d")) + " && truncate -s " + std::to_string(262144 + 50000) +
     " b && dd if=a of=b bs=65536 count=1 seek=1 conv=notrunc status=none &&"
     " dd if=a of=b bs=4096 skip=64 seek=64 conv=notrunc status=none && sync");
  const auto r = btrdedupe("-r " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Found 0 whole-file"), std::string::npos) << r.output;
}

// A re-run with --hashfile finds the new twin of a sparse file it recorded before by its
// whole-file hash (the file has no full 128 KiB block to find it by).
TEST_F(SparseDedupeTest, AHashfileRunFindsTheTwinOfARecordedSparseFile) {
  const std::vector<std::pair<uint64_t, uint64_t>> pieces{{0, 65536}, {262144, 50000}};
  sparse("a", 262144 + 50000, pieces);
  const std::string hashfile = shell_quote(work("h.hash"));
  const auto first = btrdedupe("-dr --hashfile=" + hashfile + " " + shell_quote(path("d")));
  EXPECT_EQ(first.exit_code, 0) << first.output;
  sparse("b", 262144 + 50000, pieces);
  const auto second = btrdedupe("-dr --hashfile=" + hashfile + " " + shell_quote(path("d")));
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("Found 1 whole-file and 0 partial duplicate groups"),
            std::string::npos)
      << second.output;
  EXPECT_TRUE(all_data_shared("b"));
}

}  // namespace
}  // namespace btrdedupe::test
