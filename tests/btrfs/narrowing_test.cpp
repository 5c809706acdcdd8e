// Sums propose, the kernel decides: two unchanged files whose per-sector checksums agree
// but whose bytes differ in one sector (a crc32c collision made on purpose by
// fixtures/crc32c-twin) are not "changed since the scan": the range is narrowed and all
// but that sector is shared.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

using NarrowingTest = CliTest;

TEST_F(NarrowingTest, ACollidingSectorIsLeftAndTheRestShared) {
  const std::string twin = std::string(BTRDEDUPE_FIXTURES_DIR) + "/crc32c-twin";
  sh("mkdir " + shell_quote(path("d")) + " && head -c 16777216 /dev/urandom > " +
     shell_quote(path("d/a")) + " && " + twin + " " + shell_quote(path("d/a")) + " " +
     shell_quote(path("d/b")) + " 17 && sync");
  ASSERT_NE(sh("cmp " + shell_quote(path("d/a")) + " " + shell_quote(path("d/b")) + " || true"), "");
  const auto before = state("d");
  std::string out, err;
  const int code = btrdedupe_split("-dr --json " + shell_quote(path("d")), &out, &err);
  EXPECT_EQ(code, 0) << out << err;  // nothing changed, nothing refused: not status 3
  const auto j = nlohmann::json::parse(out);
  const auto& d = j["filesystems"][0]["dedupe"];
  EXPECT_EQ(j["filesystems"][0]["duplicates"]["whole_file_groups"], 1);  // the sums agree
  EXPECT_EQ(d["ranges_unequal"], 1);
  EXPECT_EQ(d["ranges_differ"], 0);  // not "changed since the scan"
  EXPECT_EQ(d["bytes_narrowed"], 16777216 - 4096);
  EXPECT_EQ(d["bytes_deduped"], 16777216 - 4096);
  EXPECT_TRUE(d["messages"].empty()) << d["messages"];
  EXPECT_EQ(state("d"), before);  // contents and mtimes
  // Every sector but the 18th of b shares a's storage.
  const auto frag = sh("filefrag -v " + shell_quote(path("d/b")));
  std::istringstream lines(frag);
  int shared_extents = 0, others = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_search(line, std::regex("^ *[0-9]+: "))) continue;
    const bool is_shared = line.find("shared") != std::string::npos;
    if (line.find(" 17..      17:") != std::string::npos) {
      EXPECT_FALSE(is_shared) << frag;
    } else {
      EXPECT_TRUE(is_shared) << frag;
    }
    (is_shared ? shared_extents : others) += 1;
  }
  EXPECT_EQ(others, 1) << frag;
  EXPECT_GE(shared_extents, 2) << frag;
  const auto text = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(text.output.find("changed since the scan: "), std::string::npos) << text.output;
}

}  // namespace
}  // namespace btrdedupe::test
