// Alignment-free partial matching on real btrfs (issue #16): a copy shifted by 68 KiB and
// a file whose 64 KiB pieces lie in another order are deduped to within 10% of what a
// perfect 4 KiB-block dedupe would free, measured by `btrfs filesystem df`; and one crc32c
// sector of agreement never proposes a candidate.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string_view>
#include <unordered_set>

#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

class PartialMatchTest : public CliTest {
 protected:
  void TearDown() override {
    sh("rm -rf " + shell_quote(work_dir()));
    CliTest::TearDown();
  }
  std::string work_dir() const { return "/tmp/btrdedupe-partial-test-" + std::to_string(::getpid()); }

  static std::string random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i += 8) {
      const uint64_t x = rng();
      std::memcpy(&s[i], &x, std::min<size_t>(8, n - i));
    }
    return s;
  }
  // d/<name> holding `content`, written with O_DIRECT in 1 MiB pieces (an extent each, as
  // an application writing in 1 MiB would make them), from a file outside the image.
  // sparse: 1 MiB pieces of zeros are left as holes (dd conv=sparse).
  void write(const std::string& name, const std::string& content, bool sparse = false) {
    sh("mkdir -p " + shell_quote(work_dir()) + " " + shell_quote(path("d")));
    const std::string staged = work_dir() + "/" + name;
    std::ofstream(staged, std::ios::binary) << content;
    sh("dd if=" + shell_quote(staged) + " of=" + shell_quote(path("d/" + name)) +
       " bs=1M iflag=fullblock oflag=direct status=none" + (sparse ? " conv=sparse" : "") +
       " && rm " + shell_quote(staged));
    contents_.push_back(content);
  }
  // What a perfect 4 KiB-block dedupe of every file written frees: data blocks minus
  // distinct data blocks (a partial last block counts as a block).
  uint64_t perfect_4k_figure() const {
    std::unordered_set<std::string_view> distinct;
    uint64_t blocks = 0;
    for (const auto& c : contents_)
      for (size_t off = 0; off < c.size(); off += 4096, ++blocks)
        distinct.insert(std::string_view(c).substr(off, 4096));
    return (blocks - distinct.size()) * 4096;
  }
  // Runs btrdedupe -dr with `extra` options; returns what df says it freed.
  int64_t dedupe(const std::string& extra) {
    const auto before_state = state("d");
    const uint64_t before = data_used();
    std::string out, err;
    EXPECT_EQ(btrdedupe_split("-dr --json " + extra + " " + shell_quote(path("d")), &out, &err),
              0)
        << out << err;
    const int64_t freed = static_cast<int64_t>(before) - static_cast<int64_t>(data_used());
    EXPECT_EQ(state("d"), before_state);  // contents and mtimes
    const auto j = nlohmann::json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << out;
    if (!j.is_discarded()) report_freed_ = j["totals"]["freed_bytes"].get<int64_t>();
    if (!j.is_discarded())
      std::cout << "partial groups " << j["totals"]["partial_groups"] << ", deduped "
                << j["totals"]["bytes_deduped"] << ", report freed " << j["totals"]["freed_bytes"]
                << ", df freed " << freed << ", perfect " << perfect_4k_figure() << "\n";
    return freed;
  }

  std::vector<std::string> contents_;
  int64_t report_freed_ = -1;  // the last dedupe()'s totals.freed_bytes
};

TEST_F(PartialMatchTest, ACopyShiftedBy68KiBIsFreed) {
  const std::string data = random_bytes((32 << 20) + 12345, 1);
  write("a", data);
  write("b", random_bytes(68 << 10, 2) + data);  // 68 KiB inserted at the front
  const uint64_t perfect = perfect_4k_figure();
  ASSERT_EQ(perfect, ((32 << 20) + 16384) / 4096 * 4096);
  EXPECT_GE(dedupe(""), static_cast<int64_t>(perfect * 9 / 10));
}

TEST_F(PartialMatchTest, PiecesInAnotherOrderAreFreed) {
  constexpr size_t kPiece = 64 << 10, kPieces = 256;  // 16 MiB
  const std::string data = random_bytes(kPiece * kPieces, 3);
  std::vector<size_t> order(kPieces);
  for (size_t i = 0; i < kPieces; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(4));
  std::string shuffled;
  for (size_t i : order) shuffled += data.substr(i * kPiece, kPiece);
  write("a", data);
  write("b", shuffled);
  const uint64_t perfect = perfect_4k_figure();
  ASSERT_EQ(perfect, kPiece * kPieces);
  EXPECT_GE(dedupe("-b 64K"), static_cast<int64_t>(perfect * 9 / 10));
}

// Two files with distinct 64 KiB heads and the same 4 MiB tail: the tail is shared from
// its first sector (extended backwards to 64 KiB, not only from the next -b multiple), and
// b's first extent, alive then only for its head, is freed by rewriting that head.
TEST_F(PartialMatchTest, AnEqualTailAfterDistinctHeadsFreesTheOldExtents) {
  const std::string tail = random_bytes(4 << 20, 5);
  write("a", random_bytes(64 << 10, 6) + tail);
  write("b", random_bytes(64 << 10, 7) + tail);
  ASSERT_EQ(perfect_4k_figure(), 4u << 20);
  EXPECT_EQ(dedupe(""), 4 << 20);
  EXPECT_EQ(report_freed_, 4 << 20);
}

// The same 12,345 bytes at the end of two files, after a hole and distinct data: a run of
// three sectors and a partial one, shared to EOF with -b 4K, which frees b's tail extent.
TEST_F(PartialMatchTest, AnEqualUnalignedTailAfterAHoleIsShared) {
  const std::string hole(1 << 20, '\0'), tail = random_bytes(12345, 8);
  write("a", random_bytes(1 << 20, 9) + hole + tail, /*sparse=*/true);
  write("b", random_bytes(1 << 20, 10) + hole + tail, /*sparse=*/true);
  EXPECT_EQ(dedupe("-b 4K"), 16384);
  EXPECT_EQ(report_freed_, 16384);
  EXPECT_EQ(sh("cmp " + shell_quote(path("d/a")) + " " + shell_quote(path("d/b")) +
               " 2>&1 | grep -c differ || true"),
            "1\n");  // the heads still differ: only the tail was shared
}

// Three files of one crc32c sector: a, its byte copy c, and b, whose bytes differ from a's
// in 8 places with the same crc32c (fixtures/crc32c-twin). Their bytes decide the group:
// b is never given to the kernel, and a and c are deduped.
TEST_F(PartialMatchTest, OneSectorFilesAreGroupedByTheirBytesNotTheirSum) {
  const std::string twin = std::string(BTRDEDUPE_FIXTURES_DIR) + "/crc32c-twin";
  sh("mkdir " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
     " && head -c 3000 /dev/urandom > a && cp --reflink=never a c && " + twin +
     " a b 0 && sync");
  ASSERT_NE(sh("cmp " + shell_quote(path("d/a")) + " " + shell_quote(path("d/b")) + " || true"),
            "");
  const auto before = state("d");
  std::string out, err;
  ASSERT_EQ(btrdedupe_split("-dr --json " + shell_quote(path("d")), &out, &err), 0) << out << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["filesystems"][0]["duplicates"]["whole_file_groups"], 1);
  EXPECT_EQ(j["filesystems"][0]["dedupe"]["ranges_unequal"], 0);  // b was never proposed
  EXPECT_EQ(j["totals"]["bytes_deduped"], 3000);
  EXPECT_TRUE(shared("d/c"));
  EXPECT_FALSE(shared("d/b"));
  EXPECT_EQ(state("d"), before);
}

}  // namespace
}  // namespace btrdedupe::test
