// duperemove's command-line habits, which cron lines and NAS scripts rely on, and the
// time box of maintenance windows (--max-runtime).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "src/catalog/catalog.h"
#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

using CliHabitsTest = CliTest;

const std::string kSummary = "Comparison of extent info shows a net change in shared extents of: ";

// NAS boxes often give the share as a symlink to the real directory.
TEST_F(CliHabitsTest, SymlinkGivenAsTheRootIsFollowed) {
  twins("x", 1 << 20);
  sh("ln -s " + shell_quote(path("d")) + " " + shell_quote(path("share")) + " && ln -s " +
     shell_quote(path("d/x")) + " " + shell_quote(path("one")));
  const auto r = btrdedupe("-dr " + shell_quote(path("share")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(shared("d/x.copy")) << r.output;
  // A symlink met inside the tree is never followed: the link to d/x is not a second copy.
  const auto listed = btrdedupe("-r " + shell_quote(path("")));
  EXPECT_EQ(listed.output.find(path("one")), std::string::npos) << listed.output;
  // A symlink to one file, given as a root, is that file.
  const auto file = btrdedupe("-r " + shell_quote(path("one")) + " " + shell_quote(path("d/x.copy")));
  EXPECT_EQ(file.exit_code, 0) << file.output;
  EXPECT_NE(file.output.find("Scanned"), std::string::npos) << file.output;
}

// A wrapper's default, then the caller's override: the last one wins.
TEST_F(CliHabitsTest, RepeatedValuedOptionsTakeTheLastOne) {
  twins("x", 1 << 20);
  std::string out, err;
  const int code = btrdedupe_split("-dr --debug --io-threads=2 --io-threads=3 " +
                                       shell_quote(path("d")), &out, &err);
  EXPECT_EQ(code, 0) << err;
  EXPECT_NE(out.find("3 io threads"), std::string::npos) << out;
  EXPECT_NE(out.find("(0.0"), std::string::npos);
  EXPECT_EQ(err, "");
}

// A fifo or a link to /dev/null among the roots: one line, the rest done, exit status 0.
TEST_F(CliHabitsTest, RootsThatAreNotFilesOrDirectoriesArePassedOver) {
  twins("x", 1 << 20);
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  sh("ln -s /dev/null " + shell_quote(path("null")));
  std::string out, err;
  int code = btrdedupe_split("-dr " + shell_quote(path("fifo")) + " " + shell_quote(path("d")) +
                                 " " + shell_quote(path("null")), &out, &err);
  EXPECT_EQ(code, 0) << out << err;
  EXPECT_EQ(err, "btrdedupe: " + path("fifo") +
                     ": a fifo, neither a file nor a directory: passed over\n"
                     "btrdedupe: " + path("null") +
                     " (a symlink to /dev/null): a character device, neither a file nor a "
                     "directory: passed over\n");
  EXPECT_TRUE(shared("d/x.copy"));
  code = btrdedupe_split("-dr " + shell_quote(path("fifo")), &out, &err);  // nothing else
  EXPECT_EQ(code, 0) << out << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// duperemove sums every file's newly shared bytes: a deduped 4 MiB pair is 8 MiB there.
TEST_F(CliHabitsTest, SummaryLineCountsWhatDuperemoveCounts) {
  twins("x", 4 << 20);
  std::string out, err;
  const int code = btrdedupe_split("-dr --json " + shell_quote(path("d")), &out, &err);
  EXPECT_EQ(code, 0) << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["duperemove_net_change"], 8 << 20);
  EXPECT_EQ(j["net_shared_change"], 4 << 20);  // btrdedupe's own: each byte once
  twins("y", 4 << 20);
  const auto r = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(kSummary + "8388608\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("newly shared 4194304 (each byte once; 8388608 in shared extents"),
            std::string::npos)
      << r.output;
  // The line scripts grep for in a non-quiet run, in duperemove's words.
  EXPECT_NE(r.output.find("Simple read and compare of file data found 1 instances of extents "
                          "that might benefit from deduplication.\n"),
            std::string::npos)
      << r.output;
  const auto q = btrdedupe("-dqr " + shell_quote(path("d")));
  EXPECT_EQ(q.output, kSummary + "0\n");
}

// Groups of 3, 2 and 1 MiB; a time box that is up before the first round leaves them all,
// most valuable first; the next run with the hashfile does them and reads nothing twice.
TEST_F(CliHabitsTest, MaxRuntimeLeavesTheRestToTheNextRun) {
  for (int mib : {1, 3, 2}) twins("g" + std::to_string(mib), static_cast<size_t>(mib) << 20);
  // Off the filesystem deduped, or writing it would move that tree's generation.
  struct Hashfile {
    std::string path = "/tmp/btrdedupe-habits-" + std::to_string(::getpid()) + ".hash";
    ~Hashfile() { ::unlink(path.c_str()); }
  } hashfile;
  const std::string hash = " --hashfile=" + shell_quote(hashfile.path) + " ";
  std::string out, err;
  int code = btrdedupe_split("-dr --json --max-runtime=1ms" + hash + shell_quote(path("d")),
                             &out, &err);
  EXPECT_EQ(code, 4) << out << err;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["stopped_by"], "max_runtime");
  EXPECT_EQ(j["exit_code"], 4);
  EXPECT_EQ(j["max_runtime"], 0.001);
  const auto& work = j["filesystems"][0]["work"];
  EXPECT_TRUE(work["done"].empty()) << work;
  ASSERT_EQ(work["left"].size(), 3u) << work;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(work["left"][i]["bytes"], (3 - i) << 20) << work;  // largest first
    EXPECT_EQ(work["left"][i]["bytes_left"], (3 - i) << 20) << work;
    EXPECT_EQ(work["left"][i]["destinations"], 1) << work;
  }
  EXPECT_EQ(work["groups_left"], 3) << work;
  EXPECT_EQ(work["groups_done"], 0) << work;
  EXPECT_EQ(work["bytes_left"], 6 << 20) << work;
  EXPECT_EQ(j["totals"]["bytes_not_started"], 6 << 20);
  EXPECT_FALSE(shared("d/g3.copy"));
  // Text: says it was the time box, and what is left.
  code = btrdedupe_split("-dr --max-runtime=1ms" + hash + shell_quote(path("d")), &out, &err);
  EXPECT_EQ(code, 4) << out << err;
  EXPECT_NE(out.find("stopped:        at --max-runtime, after the dedupe rounds under way; "
                     "6291456 in 3 rounds left for the next run"),
            std::string::npos)
      << out;
  // The next run, given time, finishes the job; then nothing is left to do.
  code = btrdedupe_split("-dr --json --max-runtime=1h" + hash + shell_quote(path("d")), &out, &err);
  EXPECT_EQ(code, 0) << out << err;
  j = nlohmann::json::parse(out);
  EXPECT_TRUE(j["stopped_by"].is_null());
  EXPECT_EQ(j["filesystems"][0]["work"]["done"].size(), 3u);
  EXPECT_TRUE(j["filesystems"][0]["work"]["left"].empty());
  for (const char* f : {"d/g1.copy", "d/g2.copy", "d/g3.copy"}) EXPECT_TRUE(shared(f)) << f;
  // (The split output files beside d moved the tree's generation: the run looks, finds
  // nothing new, and leaves it.)
  const auto again = btrdedupe("-dr" + hash + shell_quote(path("d")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("0 files new or changed since the last run"), std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find(kSummary + "0\n"), std::string::npos) << again.output;
}

// A --hashfile run of a subfolder of the catalog's roots dedupes new copies there against
// their catalogued twins outside it (verified against the tree, sources only): nothing
// outside the subfolder is written, and the catalog keeps its scope and its rows, so the
// next run of the full roots is incremental again.
TEST_F(CliHabitsTest, HashfileRunOfASubfolderUsesTheCataloguedTwinsOutsideIt) {
  if (walking())
    GTEST_SKIP() << "the tree reader's: catalogued twins outside the roots are read by inode";
  const std::string root = shell_quote(path(""));
  sh("cd " + root + " && mkdir -p a b/sub && head -c 3145728 /dev/urandom > a/x && " +
     "head -c 2097152 /dev/urandom > a/y && cp --reflink=never a/x b/x && sync");
  struct Hashfile {
    std::string path = "/tmp/btrdedupe-subfolder-" + std::to_string(::getpid()) + ".hash";
    ~Hashfile() { ::unlink(path.c_str()); }
  } hashfile;
  const std::string hash = " --hashfile=" + shell_quote(hashfile.path) + " ";
  const std::string a = shell_quote(path("a")), b = shell_quote(path("b"));
  auto rows = [&] {
    auto c = Catalog::open(hashfile.path);  // its lock only while counting
    EXPECT_TRUE(c) << c.error().message();
    return c ? (*c)->counts().files : 0;
  };
  auto exclusive = [&](const std::string& rel) {
    return std::stoull(sh("btrfs filesystem sync " + root + " >/dev/null && btrfs filesystem du -s --raw " +
                          shell_quote(path(rel)) + " | awk 'NR == 2 { print $2 }'"));
  };
  // Names, mtimes, contents and physical extents of the files outside b/sub: a dedupe
  // destination would get another extent (and a source keeps its own).
  auto outside = [&] {
    return sh("cd " + root + " && stat -c '%n %y %s' a/x a/y b/x && sha256sum a/x a/y b/x && " +
              "for f in a/x a/y b/x; do echo $f; filefrag -v $f | awk '/^ *[0-9]+:/ { print $4 }'; done");
  };

  std::string out, err;
  ASSERT_EQ(btrdedupe_split("-dr --json" + hash + a + " " + b, &out, &err), 0) << out << err;
  EXPECT_TRUE(shared("b/x"));
  EXPECT_EQ(rows(), 3u);
  sh("cd " + root + " && cp -a --reflink=never a/x a/y b/sub/ && sync");
  EXPECT_EQ(exclusive("b/sub"), 5u << 20);
  const std::string before = outside();

  ASSERT_EQ(btrdedupe_split("-dr --json" + hash + shell_quote(path("b/sub")), &out, &err), 0)
      << out << err;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["totals"]["whole_file_groups"], 2) << out;
  EXPECT_EQ(j["totals"]["bytes_deduped"], 5 << 20) << out;
  EXPECT_EQ(j["filesystems"][0]["catalog"]["stale_rows"], 0) << out;
  EXPECT_EQ(j["filesystems"][0]["catalog"]["incremental"], false) << out;  // read whole
  EXPECT_EQ(exclusive("b/sub"), 0u);
  EXPECT_TRUE(shared("b/sub/x"));
  EXPECT_TRUE(shared("b/sub/y"));
  EXPECT_EQ(outside(), before);
  EXPECT_EQ(rows(), 5u);  // the copies' rows added, none outside b/sub dropped

  // The full roots again: incremental (the scope and generations stayed), nothing lost.
  sh("cd " + root + " && head -c 1048576 /dev/urandom > a/z && cp --reflink=never a/z b/z && sync");
  ASSERT_EQ(btrdedupe_split("-dr --json" + hash + a + " " + b, &out, &err), 0) << out << err;
  j = nlohmann::json::parse(out);
  EXPECT_EQ(j["filesystems"][0]["catalog"]["incremental"], true) << out;
  EXPECT_EQ(j["filesystems"][0]["catalog"]["stale_rows"], 0) << out;
  EXPECT_EQ(j["totals"]["whole_file_groups"], 1) << out;  // a/z and b/z only
  EXPECT_TRUE(shared("b/z"));
  EXPECT_EQ(rows(), 7u);
  EXPECT_EQ(outside(), before);
}

// The same with subvolumes, as NAS shares are: the side run of b/sub reaches the twins in
// subvolume a from the catalogued roots (a itself, or the top holding a and b), as
// sources only; a's tree is not written (its generation stays).
class SubfolderOfSubvolumesTest : public CliTest {
 protected:
  void side_run_dedupes_against(const std::vector<std::string>& catalogued) {
    const std::string root = shell_quote(path(""));
    sh("cd " + root + " && btrfs -q subvolume create a && btrfs -q subvolume create b && " +
       "head -c 3145728 /dev/urandom > a/x && head -c 2097152 /dev/urandom > a/y && " +
       "mkdir b/sub && sync");
    struct Hashfile {
      std::string path = "/tmp/btrdedupe-subvolumes-" + std::to_string(::getpid()) + ".hash";
      ~Hashfile() { ::unlink(path.c_str()); }
    } hashfile;
    const std::string hash = " --hashfile=" + shell_quote(hashfile.path) + " ";
    std::string roots;
    for (const auto& r : catalogued) roots += " " + shell_quote(path(r));
    std::string out, err;
    ASSERT_EQ(btrdedupe_split("-dr --json" + hash + roots, &out, &err), 0) << out << err;
    sh("cd " + root + " && cp -a --reflink=never a/x a/y b/sub/ && sync && " +
       "btrfs filesystem sync " + root + " >/dev/null");
    auto generation_of_a = [&] {
      return sh("btrfs subvolume show " + shell_quote(path("a")) +
                " | awk '$1 == \"Generation:\" { print $2 }'");
    };
    auto a_files = [&] {
      return sh("cd " + root + " && stat -c '%n %y %s' a/x a/y && sha256sum a/x a/y && " +
                "for f in a/x a/y; do filefrag -v $f | awk '/^ *[0-9]+:/ { print $4 }'; done");
    };
    const std::string generation = generation_of_a(), files = a_files();
    ASSERT_EQ(btrdedupe_split("-dr --json" + hash + shell_quote(path("b/sub")), &out, &err), 0)
        << out << err;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["totals"]["whole_file_groups"], 2) << out;
    EXPECT_EQ(j["totals"]["bytes_deduped"], 5 << 20) << out;
    EXPECT_TRUE(shared("b/sub/x"));
    EXPECT_TRUE(shared("b/sub/y"));
    sh("btrfs filesystem sync " + root + " >/dev/null");
    EXPECT_EQ(sh("btrfs filesystem du -s --raw " + shell_quote(path("b/sub")) +
                 " | awk 'NR == 2 { print $2 }'"),
              "0\n");
    EXPECT_EQ(a_files(), files);
    EXPECT_EQ(generation_of_a(), generation);
  }
};

TEST_F(SubfolderOfSubvolumesTest, TwinsInAnotherCataloguedSubvolumeAreSources) {
  side_run_dedupes_against({"a", "b"});
}

TEST_F(SubfolderOfSubvolumesTest, TwinsInASubvolumeNestedBelowTheCataloguedRoot) {
  side_run_dedupes_against({""});
}

// A run in windows (-B) on a real terminal (script(1)): one line, redrawn in place, that
// names the window of all and the run's bytes; nothing stacked per window or phase.
TEST_F(CliHabitsTest, OneProgressLineForAWindowedRun) {
  if (walking()) GTEST_SKIP() << "windows are the tree reader's: a walk reads whole";
  for (int i = 0; i < 6; ++i) twins("w" + std::to_string(i), 1 << 20);
  const auto tty = sh("script -qec " +
                      shell_quote(binary() + " -dr -B 4 " +
                                  shell_quote(path("d"))) +
                      " /dev/null");
  EXPECT_NE(tty.find("\r\033[Kwindow 1/"), std::string::npos) << tty;
  EXPECT_NE(tty.find("\r\033[Kwindow 3/3 · dedupe 100% · "), std::string::npos) << tty;
  EXPECT_NE(tty.find(" of 12.0 MiB · ETA "), std::string::npos) << tty;
  // Until it is erased for the report, nothing ends the line: no block per window or phase.
  const auto erased = tty.rfind("\r\033[K");
  ASSERT_NE(erased, std::string::npos) << tty;
  EXPECT_EQ(std::count(tty.begin(), tty.begin() + static_cast<std::ptrdiff_t>(erased), '\n'), 0)
      << tty;
  EXPECT_EQ(tty.rfind("Scanned ", erased), std::string::npos) << tty;  // the report follows
  EXPECT_NE(tty.find("Scanned ", erased), std::string::npos) << tty;
}

}  // namespace
}  // namespace btrdedupe::test
