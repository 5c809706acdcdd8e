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
  // Every sector but the 18th of the destination shares the source's storage. Either file
  // may be the source: the least fragmented is, and how many extents head -c leaves varies.
  struct Layout {
    int shared_extents = 0, others = 0;
    bool sector_17_alone = false;
    std::string frag;
  };
  auto layout_of = [&](const std::string& name) {
    Layout l;
    l.frag = sh("filefrag -v " + shell_quote(path("d/" + name)));
    std::istringstream lines(l.frag);
    for (std::string line; std::getline(lines, line);) {
      if (!std::regex_search(line, std::regex("^ *[0-9]+: "))) continue;
      const bool is_shared = line.find("shared") != std::string::npos;
      if (!is_shared && line.find(" 17..      17:") != std::string::npos) l.sector_17_alone = true;
      (is_shared ? l.shared_extents : l.others) += 1;
    }
    return l;
  };
  const Layout a = layout_of("a"), b = layout_of("b");
  const Layout& destination = a.others ? a : b;
  const Layout& source = a.others ? b : a;
  EXPECT_EQ(source.others, 0) << source.frag;
  EXPECT_EQ(destination.others, 1) << destination.frag;
  EXPECT_TRUE(destination.sector_17_alone) << destination.frag;
  EXPECT_GE(destination.shared_extents, 2) << destination.frag;
  const auto text = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(text.output.find("changed since the scan: "), std::string::npos) << text.output;
}

}  // namespace
}  // namespace btrdedupe::test
