// The program from its arguments to its exit code without root: run_command_line in an
// in-memory btrfs (tests/unit/memory_btrfs.h), its stdout and stderr captured. The same
// habits run against real btrfs in tests/btrfs/cli_test.cpp.
#include "src/cli/command_line.h"

#include <gtest/gtest.h>

#include <linux/magic.h>
#include <stdlib.h>
#include <sys/vfs.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"
#include "src/cli/cli_options.h"
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

// Whether `path` is on a real btrfs, where the machine's own commands would work.
bool on_btrfs(const std::string& path) {
  struct statfs s {};
  return ::statfs(path.c_str(), &s) == 0 && s.f_type == BTRFS_SUPER_MAGIC;
}

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

TEST_F(CommandLineTest, HelpAndVersionAreTheWholeRun) {
  const Ran help = btrdedupe({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, cli_help());
  const Ran version = btrdedupe({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, std::string("btrdedupe ") + BTRDEDUPE_VERSION + "\n");
  EXPECT_EQ(fs.dedupe_calls(), 0u);
}

// --exclude: a pattern below the root, and one on the full path from the root's real path.
TEST_F(CommandLineTest, ExcludedFilesAreNeitherReadNorDeduped) {
  write_pairs(3, 8);
  char* real = ::realpath(fs.root().c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  const std::string absolute = std::string(real) + "/b2";
  std::free(real);
  const Ran ran = btrdedupe({"-dr", "--exclude=a1", "--exclude=" + absolute, fs.root()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_FALSE(shares("a1", "b1"));
  EXPECT_FALSE(shares("a2", "b2"));
  EXPECT_NE(ran.out.find("excluded by --exclude: 2 files"), std::string::npos) << ran.out;
}

TEST_F(CommandLineTest, DebugSaysTheOptionsInEffect) {
  write_pairs(1, 8);
  const Ran ran = btrdedupe({"-r", "--debug", "--min-size=8K", "--exclude=x", fs.root()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(ran.out.find("debug: 1 paths, recursive on, dedupe off, min size 8192, "
                         "1 exclude patterns, progress sink off\n"),
            std::string::npos)
      << ran.out;
  // -q: not even that.
  EXPECT_EQ(btrdedupe({"-r", "-q", "--debug", fs.root()}).out.find("debug:"), std::string::npos);
}

// --fdupes: the groups come on stdin; the world says which filesystem each file is on. The
// in-memory btrfs's files are deduped whole; a missing file and one off it are refused,
// each in its own line, and the run says it met errors.
TEST_F(CommandLineTest, FdupesGroupsAreDedupedAndFilesOffTheFilesystemRefused) {
  write_pairs(2, 8);
  const std::string outside = fs.root() + "-outside";
  { std::ofstream(outside) << "not on the in-memory btrfs"; }
  std::istringstream groups(fs.root() + "/a0\n" + fs.root() + "/b0\n" + outside + "\n\n" +
                            fs.root() + "/a1\n" + fs.root() + "/no-such-file\n");
  std::streambuf* const stdin_buffer = std::cin.rdbuf(groups.rdbuf());
  const Ran ran = btrdedupe({"--fdupes", "-d"});
  std::cin.rdbuf(stdin_buffer);
  std::filesystem::remove(outside);
  EXPECT_EQ(ran.exit_code, 1) << ran.err;
  EXPECT_NE(ran.out.find("fdupes input: 1 groups of 2 or more files, 2 files\n"),
            std::string::npos)
      << ran.out;
  for (const std::string& file : {outside, fs.root() + "/no-such-file"})
    EXPECT_NE(ran.err.find("btrdedupe: fdupes input: " + file), std::string::npos)
        << file << "\n" << ran.err;
  EXPECT_TRUE(shares("a0", "b0"));
  EXPECT_FALSE(shares("a1", "b1"));  // a group of one left: not named together
  EXPECT_EQ(fs.dedupe_calls(), 1u);
}

// --progress: JSON events (or a terminal's line) on stderr, the report on stdout as ever.
TEST_F(CommandLineTest, ProgressGoesToStderr) {
  write_pairs(1, 8);
  const Ran json = btrdedupe({"-dr", "--progress=json", fs.root()});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.err.find("{\"event\":\"phase\",\"phase\":\"scan\""), std::string::npos)
      << json.err;
  EXPECT_NE(json.err.find("{\"event\":\"finish\",\"exit_code\":0"), std::string::npos) << json.err;
  EXPECT_NE(json.out.find("Summary:"), std::string::npos) << json.out;
  fs.write_file("c", content(7000, 4));
  fs.write_file("d", content(7000, 4));
  const Ran tty = btrdedupe({"-dr", "--progress=tty", fs.root()});
  EXPECT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_NE(tty.err.find('\r'), std::string::npos) << tty.err;
  EXPECT_EQ(tty.out.find('\r'), std::string::npos);
  EXPECT_TRUE(shares("c", "d"));
}

// --follow needs btrfs's own trees: on this directory (not btrfs) it says why and stops.
TEST_F(CommandLineTest, FollowRefusesWhatItCannotFollow) {
  if (on_btrfs(fs.root())) GTEST_SKIP() << fs.root() << " is on btrfs";
  stop_ = true;  // were it followed after all, the follower would end at once
  const std::string h = "--hashfile=" + hashfile();
  const Ran walked = btrdedupe({"--follow", "--reader=paths", h, fs.root()});
  EXPECT_EQ(walked.exit_code, 2);
  EXPECT_NE(walked.err.find("not --reader=paths"), std::string::npos) << walked.err;
  const Ran other = btrdedupe({"--follow", "--no-yield", h, fs.root()});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.err.rfind("btrdedupe: --follow: ", 0), 0u) << other.err;
  EXPECT_EQ(other.out, "");
  EXPECT_EQ(fs.dedupe_calls(), 0u);
}

// --list-subvols asks the run world's subvolume ground: the in-memory btrfs lists its one.
TEST_F(CommandLineTest, ListSubvolumesListsTheWorldsSubvolumes) {
  const Ran ran = btrdedupe({"--list-subvols", fs.root()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.err, "");
  EXPECT_NE(ran.out.find("Subvolumes of " + fs.root()), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("<top level>"), std::string::npos) << ran.out;
}

// -R: the files under the paths forgotten, so that the next run reads them again.
TEST_F(CommandLineTest, RemovedFilesAreReadAgainByTheNextRun) {
  write_pairs(1, 8);
  const std::string h = "--hashfile=" + hashfile();
  ASSERT_EQ(btrdedupe({"-dr", h, fs.root()}).exit_code, 0);
  const Ran unchanged = btrdedupe({"-dr", h, fs.root()});
  EXPECT_NE(unchanged.out.find("Nothing changed since the last run"), std::string::npos)
      << unchanged.out;
  const Ran removed = btrdedupe({"-R", h, fs.root()});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(removed.out, "Removed 2 files from " + hashfile() +
                             "; 1 subvolume(s) will be read again\n");
  const Ran again = btrdedupe({"-dr", h, fs.root()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("Hashfile: 2 files new or changed since the last run, 0 unchanged"),
            std::string::npos)
      << again.out;
  // A path that cannot be scanned is an error; the others are still forgotten.
  const Ran missing = btrdedupe({"-R", h, fs.root() + "/no-such-file", fs.root()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no-such-file"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "Removed 2 files from " + hashfile() +
                             "; 1 subvolume(s) will be read again\n");
}

TEST_F(CommandLineTest, RemovingFromAnotherFilesystemsHashfileChangesNothing) {
  write_pairs(1, 8);
  {
    auto other = Catalog::open(hashfile());
    ASSERT_TRUE(other);
    ASSERT_TRUE((*other)->bind("another filesystem"));
  }
  const Ran ran = btrdedupe({"-R", "--hashfile=" + hashfile(), fs.root()});
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_EQ(ran.err, "btrdedupe: " + fs.root() + " is not on the filesystem of hashfile " +
                         hashfile() + "\n");
  EXPECT_EQ(ran.out, "Removed 0 files from " + hashfile() +
                         "; 0 subvolume(s) will be read again\n");
}

}  // namespace
}  // namespace btrdedupe::test
