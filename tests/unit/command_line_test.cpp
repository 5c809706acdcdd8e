// The program from its arguments to its exit code without root: run_command_line in an
// in-memory btrfs (tests/unit/memory_btrfs.h), its stdout and stderr captured. The same
// habits run against real btrfs in tests/btrfs/cli_test.cpp.
#include "src/cli/command_line.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <string>
#include <vector>

#include "tests/unit/run_job_fixture.h"

namespace btrdedupe::test {
namespace {

struct Ran {
  int exit_code = -1;
  std::string out, err;
};

class CommandLineTest : public RunJobTest {
 protected:
  Ran btrdedupe(std::vector<std::string> args) {
    args.insert(args.begin(), "btrdedupe");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    StopSignals signals{stop_, cycle_stop_, wake_, signal_};
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    Ran ran;
    ran.exit_code = run_command_line(static_cast<int>(args.size()), argv.data(), fs, signals);
    ran.out = ::testing::internal::GetCapturedStdout();
    ran.err = ::testing::internal::GetCapturedStderr();
    return ran;
  }

  std::atomic<bool> stop_{false}, cycle_stop_{false}, wake_{false};
  volatile std::sig_atomic_t signal_ = 0;
};

TEST_F(CommandLineTest, DedupesAndSaysWhatItFreed) {
  write_pairs(2, 8);
  const uint64_t before = fs.referenced_bytes();
  const Ran ran = btrdedupe({"-dr", fs.root()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.err, "");
  const uint64_t freed = before - fs.referenced_bytes();
  EXPECT_EQ(freed, 2 * 8 * kBlock);
  EXPECT_NE(ran.out.find(std::to_string(freed) + " freed"), std::string::npos) << ran.out;
  EXPECT_TRUE(shares("a0", "b0"));
}

TEST_F(CommandLineTest, JsonCarriesTheFreedFigure) {
  write_pairs(1, 8);
  const Ran ran = btrdedupe({"-dr", "--json", fs.root()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out.front(), '{');
  EXPECT_NE(ran.out.find("\"freed_bytes\": " + std::to_string(8 * kBlock)), std::string::npos)
      << ran.out;
}

// Without -d: a report of what -d would do, nothing changed, the groups listed.
TEST_F(CommandLineTest, AReportListsTheGroupsAndChangesNothing) {
  write_pairs(1, 8);
  const Ran ran = btrdedupe({"-r", "-h", fs.root()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(fs.dedupe_calls(), 0u);
  EXPECT_FALSE(shares("a0", "b0"));
  EXPECT_NE(ran.out.find(fs.root() + "/a0"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("32.0 KiB"), std::string::npos) << ran.out;
}

// A hashfile's run, its replay with no paths (nothing changed: nothing read), and -L.
TEST_F(CommandLineTest, AHashfileIsReplayedAndListed) {
  write_pairs(1, 8);
  const std::string h = "--hashfile=" + hashfile();
  EXPECT_EQ(btrdedupe({"-dr", h, fs.root()}).exit_code, 0);
  const Ran replay = btrdedupe({h});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.out.find("Nothing changed since the last run"), std::string::npos) << replay.out;
  EXPECT_EQ(fs.dedupe_calls(), 1u);
  const Ran listed = btrdedupe({"-L", h});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("root: " + fs.root()), std::string::npos) << listed.out;
}

// Exit codes (btrdedupe(8)): 2 for a usage error, 3 when ranges were left as they were,
// 1 when the kernel failed a dedupe, each error naming the file on stderr.
TEST_F(CommandLineTest, ExitCodesSayHowTheRunEnded) {
  EXPECT_EQ(btrdedupe({"--no-such-option"}).exit_code, 2);
  write_pairs(1, 8);
  fs.on_call = [&](size_t) { ::chmod((fs.root() + "/b0").c_str(), 0600); };
  fs.script = always(outcome(btrfs::DedupeStatus::Differs));
  EXPECT_EQ(btrdedupe({"-dr", fs.root()}).exit_code, 3);
  fs.on_call = nullptr;
  fs.script = always(outcome(btrfs::DedupeStatus::Error, EIO));
  const Ran failed = btrdedupe({"-dr", fs.root()});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.err.find("Input/output error"), std::string::npos) << failed.err;
}

}  // namespace
}  // namespace btrdedupe::test
