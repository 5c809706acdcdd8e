// The btrdedupe binary as users and scripts run it.
#include <gtest/gtest.h>

#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

class CliTest : public BtrfsTest {
 protected:
  CommandResult btrdedupe(const std::string& args) {
    return run_command(std::string(BTRDEDUPE_BINARY) + " " + args);
  }
  std::string state(const std::string& rel) {
    return sh("cd " + shell_quote(path(rel)) +
              " && find . -type f -printf '%p %T@\\n' | sort"
              " && find . -type f -print0 | sort -z | xargs -0 -r sha256sum");
  }
};

TEST_F(CliTest, DedupesAcrossSeveralPathsOfOneFilesystem) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir A B && head -c 3000000 /dev/urandom > A/x && cp --reflink=never A/x B/x"
     " && head -c 100000 /dev/urandom > A/only && sync");
  const auto before = state("");
  const auto r = btrdedupe("-d -r " + shell_quote(path("A")) + " " + shell_quote(path("B")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // duperemove's summary line, raw bytes: B/x now shares A/x's 3000000 bytes (block-rounded).
  EXPECT_NE(r.output.find("Comparison of extent info shows a net change in shared extents of: 3002368\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(state(""), before);
  EXPECT_NE(sh("filefrag -v " + shell_quote(path("B/x"))).find("shared"), std::string::npos);
}

TEST_F(CliTest, WithoutDedupeItListsGroupsAndChangesNothing) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 200000 /dev/urandom > 'a file' && cp --reflink=never 'a file' copy && sync");
  const auto r = btrdedupe("-r " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Found 1 whole-file and 0 partial duplicate groups: 200000 to dedupe"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(path("a file") + "\t0\t"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(path("copy") + "\t0\t"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Comparison of extent info"), std::string::npos);
  EXPECT_EQ(sh("filefrag -v " + shell_quote(path("copy"))).find("shared"), std::string::npos);
}

TEST_F(CliTest, QuietPrintsOnlyTheSummaryLine) {
  sh("cd " + shell_quote(path("")) +
     " && head -c 65536 /dev/urandom > a && cp --reflink=never a b && sync");
  const auto r = btrdedupe("-dqr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "Comparison of extent info shows a net change in shared extents of: 65536\n");
}

TEST(CliUsage, BadOptionsExitTwoWithOneLine) {
  for (const char* args : {"--no-such-option /", "", "-b 3K /", "-b 0 /", "--io-threads 0 /",
                           "--min-size lots /"}) {
    const auto r = run_command(std::string(BTRDEDUPE_BINARY) + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("btrdedupe: ", 0), 0u) << r.output;
  }
}

TEST(CliUsage, PathErrorsNameThePathAndExitOne) {
  auto r = run_command(std::string(BTRDEDUPE_BINARY) + " -r /dev/shm");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "btrdedupe: /dev/shm is on tmpfs, not btrfs\n");
  r = run_command(std::string(BTRDEDUPE_BINARY) + " -r /nonexistent/x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "btrdedupe: open /nonexistent/x: No such file or directory\n");
}

}  // namespace
}  // namespace btrdedupe::test
