// Bad input through the binary: paths that cannot be scanned, odd sizes and patterns,
// hashfiles that must be refused (or may be used), odd names, a tree deeper than PATH_MAX
// and a directory with 20,000 entries. Each run that reaches a filesystem checks the
// data-safety invariant.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <random>

#include "tests/btrfs/reliability_support.h"

namespace btrdedupe::test {
namespace {

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}


CommandResult run_binary(const std::string& args) {
  return run_command(std::string(BTRDEDUPE_BINARY) + " " + args);
}

TEST(ReliabilityInput, PathsThatCannotBeScannedAreNamedAndExitOne) {
  auto r = run_binary("-dr /nonexistent/x");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "btrdedupe: open /nonexistent/x: No such file or directory"))
      << r.output;
  r = run_binary("-dr /dev/shm");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "btrdedupe: /dev/shm is on tmpfs: btrdedupe dedupes on btrfs and XFS"))
      << r.output;
  r = run_binary("-dr /proc");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "is on proc: btrdedupe dedupes on btrfs and XFS")) << r.output;
  print_counts({3, 0, 0, 0});
}

TEST(ReliabilityInput, BadSizesAreUsageErrors) {
  const std::vector<std::string> bad = {"-b 3K", "-b 0", "-b 4097", "-b 2G", "-b -4K", "-b ''",
                                       "-b 4X", "-b 99999999999999999999", "-b 17179869184T",
                                       "--min-size=-1", "--min-size 1E", "--io-threads 100000"};
  print_counts({bad.size(), 0, 0, 0});
  for (const auto& args : bad) {
    const auto r = run_binary(std::string(args) + " -dr /nonexistent");
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("btrdedupe: ", 0), 0u) << args << ": " << r.output;
  }
}

// boost's error messages substitute %placeholders% until none is left: an option text that
// holds one made btrdedupe loop forever (found by fuzz_cli). Now a one-line usage error.
TEST(ReliabilityInput, OptionTextsWithPlaceholdersAreUsageErrorsNotHangs) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-B %value%", "'%value%'"},
      {"--io-threads %value%x", "'%value%x'"},
      {"--cpu-threads %canonical_option%", "'%canonical_option%'"},
      {"--%canonical_option%", "'--%canonical_option%'"},
      {"--%value%=%value%", "%value%"},
      {"-B %original_token%%prefix%%option%", "'%original_token%%prefix%%option%'"},
  };
  print_counts({cases.size(), 0, 0, 0});
  for (const auto& [args, shown] : cases) {
    const auto r =
        run_command("timeout 10 " + std::string(BTRDEDUPE_BINARY) + " " + args + " /nonexistent");
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;  // 124: timeout killed a hang
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
    EXPECT_TRUE(has(r.output, shown)) << args << ": " << r.output;
  }
}

class InputTest : public ReliabilityTest {
 protected:
  void pair(const std::string& a, const std::string& b, int bytes = 1048576) {
    sh("cd " + shell_quote(path("")) + " && head -c " + std::to_string(bytes) +
       " /dev/urandom > " + shell_quote(a) + " && cp --reflink=never " + shell_quote(a) + " " +
       shell_quote(b) + " && sync");
  }
};

TEST_F(InputTest, FileInsteadOfDirectoryWithRecursiveScansThatFile) {
  pair("a", "b");
  const auto before = state();
  injected();
  auto r = btrdedupe("-dr " + shell_quote(path("a")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 0) << r.output;  // one file: nothing to pair it with
  // Two files given as paths are deduped together, -r or not.
  r = btrdedupe("-dr " + shell_quote(path("a")) + " " + shell_quote(path("b")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 2 * 1048576) << r.output;
  expect_unchanged(before);
}

TEST_F(InputTest, ExcludePatternsThatMatchEverythingLeaveNothingToDo) {
  pair("a", "b");
  sh("mkdir " + shell_quote(path("sub")) + " && cp --reflink=never " + shell_quote(path("a")) +
     " " + shell_quote(path("sub/c")) + " && sync");
  const auto before = state();
  for (const std::string& pattern : std::vector<std::string>{"*", "/*", "?*", path("") + "/*"}) {
    injected();
    const auto r =
        btrdedupe("-dr --exclude " + shell_quote(pattern) + " " + shell_quote(path("")));
    EXPECT_EQ(r.exit_code, 0) << pattern << ": " << r.output;
    EXPECT_EQ(net_change(r.output), 0) << pattern << ": " << r.output;
  }
  expect_unchanged(before);
}

TEST_F(InputTest, UnusualButValidBlockSizesWork) {
  pair("a", "b", 3 << 20);
  const auto before = state();
  for (const char* b : {"4K", "4096", "1G", "132k"}) {
    sh("cp --reflink=never " + shell_quote(path("a")) + " " + shell_quote(path("c")) + " && sync");
    injected();
    const auto r = btrdedupe(std::string("-dr -b ") + b + " " + shell_quote(path("")));
    EXPECT_EQ(r.exit_code, 0) << b << ": " << r.output;
    EXPECT_GE(net_change(r.output), 3 << 20) << b << ": " << r.output;
    sh("rm " + shell_quote(path("c")) + " && sync");
  }
  expect_unchanged(before);
}

TEST_F(InputTest, OddNamesAreDedupedAndPrintedEscaped) {
  build_layout("odd-names", "o");
  const auto before = state();
  injected(11);  // the 11 odd names (each twice)
  const auto r = btrdedupe("-dr -v " + shell_quote(path("o")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(net_change(r.output), 54652) << r.output;  // 11 pairs (fixtures/README.md)
  EXPECT_TRUE(has(r.output, "new\\nline")) << r.output;
  EXPECT_TRUE(has(r.output, "invalid-utf8-\\xFF\\xFE")) << r.output;
  expect_unchanged(before);
  const auto again = btrdedupe("-dr " + shell_quote(path("o")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(net_change(again.output), 0) << again.output;
}

// 25 directories of 200-byte names: the file's path is over 5,000 bytes, beyond PATH_MAX.
TEST_F(InputTest, TreeDeeperThanPathMaxIsScannedAndDeduped) {
  // (bash: dash's cd refuses once $PWD is longer than PATH_MAX.)
  sh("bash -c " + shell_quote("cd " + shell_quote(path("")) +
                              " && head -c 300000 /dev/urandom > top && mkdir deep && cd deep"
                              " && n=$(printf 'd%.0s' $(seq 1 200)) && for i in $(seq 1 25);"
                              " do mkdir $n && cd $n; done && cp --reflink=never " +
                              shell_quote(path("top")) + " f && cp --reflink=never f g && sync"));
  const auto before = state();
  ASSERT_EQ(before.size(), 3u);
  injected();
  size_t longest = 0;
  for (const auto& [rel, s] : before) longest = std::max(longest, rel.size());
  EXPECT_GT(longest + path("").size(), static_cast<size_t>(PATH_MAX));
  const auto r = btrdedupe("-dr " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  EXPECT_EQ(net_change(r.output), 3 * 303104) << r.output.substr(0, 4000);  // all 3 copies
  EXPECT_FALSE(has(r.output, "File name too long")) << r.output.substr(0, 4000);
  expect_unchanged(before);
}

TEST_F(InputTest, TwentyThousandEntriesInOneDirectory) {
  const std::string dir = path("many");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  std::mt19937_64 rng(42);
  std::string block(4096, '\0');
  for (int i = 0; i < 10000; ++i) {
    for (size_t k = 0; k < block.size(); k += 8) {
      const uint64_t v = rng();
      std::memcpy(&block[k], &v, 8);
    }
    for (const char* prefix : {"f", "c"}) {
      char name[64];
      std::snprintf(name, sizeof name, "%s/%s%05d", dir.c_str(), prefix, i);
      const int fd = ::open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0) << name;
      ASSERT_EQ(::write(fd, block.data(), block.size()), 4096);
      ::close(fd);
    }
  }
  const auto before = state();
  ASSERT_EQ(before.size(), 20000u);
  injected();
  const auto r = btrdedupe("-dr " + shell_quote(dir));
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  EXPECT_EQ(net_change(r.output), 2 * 10000 * 4096) << r.output.substr(0, 4000);
  expect_unchanged(before);
}

// --- Hashfiles ---------------------------------------------------------------------------

class HashfileInputTest : public InputTest {
 protected:
  void SetUp() override {
    InputTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    hashfile_ = fs().image_file() + ".hash";  // outside the filesystem being deduped
    pair("a", "b");
  }
  void TearDown() override {
    run_command("rm -f " + shell_quote(hashfile_) + "*");
    InputTest::TearDown();
  }
  std::string file_sha(const std::string& f) { return sh("sha256sum < " + shell_quote(f)); }
  std::string hashfile_;
};

TEST_F(HashfileInputTest, ForeignHashfilesAreRefusedUntouchedAndNothingIsDeduped) {
  ASSERT_EQ(btrdedupe("-r --hashfile=" + shell_quote(hashfile_) + " " + shell_quote(path("")))
                .exit_code,
            0);
  std::string why;
  auto other = BtrfsImage::create({}, &why);
  ASSERT_TRUE(other) << why;
  const std::string other_hash = other->image_file() + ".hash";
  sh("head -c 100000 /dev/urandom > " + shell_quote(other->path("x")) + " && sync");
  ASSERT_EQ(btrdedupe("-r --hashfile=" + shell_quote(other_hash) + " " +
                      shell_quote(other->path("")))
                .exit_code,
            0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"garbage", "head -c 10000 /dev/urandom > F"},
      {"truncated", "head -c 3000 " + shell_quote(hashfile_) + " > F"},
      {"another program's", "sqlite3 F 'CREATE TABLE notes(x); INSERT INTO notes VALUES(1);'"},
      {"another filesystem's", "cp " + shell_quote(other_hash) + " F"},
      {"text", "printf 'not a database\\n' > F"},
  };
  const auto before = state();
  for (const auto& [what, make] : cases) {
    const std::string f = hashfile_ + ".case";
    run_command("rm -f " + shell_quote(f) + "*");
    std::string cmd = make;
    cmd.replace(cmd.rfind('F'), 1, shell_quote(f));
    sh(cmd);
    injected();
    const auto sha = file_sha(f);
    const auto r = btrdedupe("-dr --hashfile=" + shell_quote(f) + " " + shell_quote(path("")));
    EXPECT_EQ(r.exit_code, 1) << what << ": " << r.output;
    EXPECT_TRUE(has(r.output, "hashfile " + f)) << what << ": " << r.output;
    EXPECT_EQ(file_sha(f), sha) << what << " was modified";
    EXPECT_EQ(net_change(r.output), 0) << what << ": " << r.output;
    run_command("rm -f " + shell_quote(f) + "*");
  }
  expect_unchanged(before);
  run_command("rm -f " + shell_quote(other_hash) + "*");
}

TEST_F(HashfileInputTest, ReadOnlyHashfiles) {
  const auto before = state();
  // Mode 0400: root's open for writing ignores the mode bits, so the run uses it.
  sh("touch " + shell_quote(hashfile_) + " && chmod 400 " + shell_quote(hashfile_));
  injected();
  auto r = btrdedupe("-dr --hashfile=" + shell_quote(hashfile_) + " " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 2 * 1048576) << r.output;
  // On a read-only mount: refused with the reason, before any scan; nothing deduped.
  std::string why;
  auto ro = BtrfsImage::create({}, &why);
  ASSERT_TRUE(ro) << why;
  sh("cp " + shell_quote(hashfile_) + " " + shell_quote(ro->path("kept.hash")) +
     " && mount -o remount,ro " + shell_quote(ro->mount_point()));
  injected(2);
  pair("c", "d");
  const auto before2 = state();
  for (const std::string& f : {ro->path("new.hash"), ro->path("kept.hash")}) {
    r = btrdedupe("-dr --hashfile=" + shell_quote(f) + " " + shell_quote(path("")));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(has(r.output, "hashfile " + f + ": cannot open for writing: Read-only file system"))
        << r.output;
    EXPECT_EQ(net_change(r.output), 0) << r.output;
  }
  expect_unchanged(before2);
  run_command("mount -o remount,rw " + shell_quote(ro->mount_point()));
  (void)before;
}

// Decided: a hashfile inside the tree it serves works. It is scanned like any file (its
// own writes make the run see its subvolume as changed, so the "nothing changed" shortcut
// never fires there); it is never deduped against anything (no other file has its bytes).
TEST_F(HashfileInputTest, HashfileOnTheFilesystemBeingDedupedWorks) {
  const std::string inside = path("btrdedupe.hash");
  auto not_hashfile = [](const std::string& rel) { return rel.rfind("btrdedupe.hash", 0) == 0; };
  const auto before = state("", not_hashfile);
  injected();
  auto r = btrdedupe("-dr --hashfile=" + shell_quote(inside) + " " + shell_quote(path("")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 2 * 1048576) << r.output;
  pair("c", "d");
  const auto before2 = state("", not_hashfile);
  for (int run = 0; run < 2; ++run) {
    r = btrdedupe("-dr --hashfile=" + shell_quote(inside) + " " + shell_quote(path("")));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(net_change(r.output), run == 0 ? 2 * 1048576 : 0) << r.output;
  }
  expect_unchanged(before2, "", not_hashfile);
  (void)before;
}

}  // namespace
}  // namespace btrdedupe::test
