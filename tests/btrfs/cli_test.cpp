// The btrdedupe binary as users and scripts run it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/btrfs/cli_fixture.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

TEST_F(CliTest, DedupesAcrossSeveralPathsOfOneFilesystem) {
  sh("cd " + shell_quote(path("")) +
     " && mkdir A B && head -c 3000000 /dev/urandom > A/x && cp --reflink=never A/x B/x"
     " && head -c 100000 /dev/urandom > A/only && sync");
  const auto before = state("");
  const auto r = btrdedupe("-d -r " + shell_quote(path("A")) + " " + shell_quote(path("B")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // duperemove's summary line, raw bytes: B/x now shares A/x's 3000000 bytes (block-rounded),
  // counted in both files as duperemove counts it.
  EXPECT_NE(r.output.find("Comparison of extent info shows a net change in shared extents of: 6004736\n"),
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
  EXPECT_EQ(r.output, "Comparison of extent info shows a net change in shared extents of: 131072\n");
}

TEST(CliUsage, BadOptionsExitTwoWithOneLine) {
  for (const char* args : {"--no-such-option /", "", "-b 3K /", "-b 0 /", "--io-threads 0 /",
                           "--min-size lots /", "-B 0 /", "-B x /", "--cpu-threads 0 /",
                           "--dedupe-options=fiemap /", "--dedupe-options=, /",
                           "--progress=loud /", "--fdupes /", "--read-hashes=h /",
                           "--write-hashes=h /", "--exclude", "--io-threads", "-L /"}) {
    const auto r = run_command(binary() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("btrdedupe: ", 0), 0u) << r.output;
  }
}

TEST(CliUsage, PathErrorsNameThePathAndExitOne) {
  auto r = run_command(binary() + " -r /dev/shm");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "btrdedupe: /dev/shm is on tmpfs: btrdedupe dedupes on btrfs and XFS\n");
  r = run_command(binary() + " -r /nonexistent/x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "btrdedupe: open /nonexistent/x: No such file or directory\n");
}


TEST(CliUsage, HelpAndVersion) {
  auto r = run_command(binary() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output.rfind("Usage: btrdedupe [options] PATH...\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("--dedupe-options"), std::string::npos);
  EXPECT_NE(r.output.find("Exit status"), std::string::npos);
  r = run_command(binary() + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "btrdedupe " BTRDEDUPE_VERSION "\n");
}

TEST_F(CliTest, VerboseListsTheGroupsWhenDeduping) {
  twins("v", 200000);
  const auto plain = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(plain.output.find("\tsource\n"), std::string::npos) << plain.output;
  sh("cp --reflink=never " + shell_quote(path("d/v")) + " " + shell_quote(path("d/v.third")) +
     " && sync");
  const auto r = btrdedupe("-drv " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // v and v.copy share since the first run: one is the source, v.third the destination.
  EXPECT_NE(r.output.find("200000 whole files, 3 ranges:\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(path("d/v.third") + "\t0\t[layout "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("]\tdestination\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("]\tsource\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("]\tunchanged\n"), std::string::npos) << r.output;
  EXPECT_TRUE(shared("d/v.third"));
}

TEST_F(CliTest, DebugPrintsTheOptionsAndCountersInEffect) {
  twins("g", 100000);
  const auto r = btrdedupe("-dr --debug " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("debug: 1 paths, recursive on, dedupe on"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("csum tree searches"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("prefetched"), std::string::npos) << r.output;
}

TEST_F(CliTest, HumanSizesButTheSummaryLineStaysRawBytes) {
  twins("h", 3 << 20);
  const auto r = btrdedupe("-dhr " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3.0 MiB to dedupe"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Comparison of extent info shows a net change in shared extents of: 6291456\n"),
            std::string::npos)
      << r.output;
}

TEST_F(CliTest, BlockSizeSetsThePartialMatchGranularity) {
  // b starts with a's first 64 KiB, then differs: a partial match of 64 KiB blocks only.
  // Each file is written by one direct write, so each is one extent: built with two writes,
  // another test's sync between them left b in two extents, the first equal to a's start,
  // which a default run then rightly dedupes as a short run that frees it.
  sh("t=$(mktemp -d) && head -c 262144 /dev/urandom > $t/a && head -c 65536 $t/a > $t/b"
     " && head -c 196608 /dev/urandom >> $t/b && mkdir " + shell_quote(path("d")) +
     " && for f in a b; do dd if=$t/$f of=" + shell_quote(path("d")) + "/$f bs=256K count=1"
     " oflag=direct status=none || exit 1; done && rm -r $t && sync");
  ASSERT_EQ(extent_items("d/a"), 1u);
  ASSERT_EQ(extent_items("d/b"), 1u);
  auto r = btrdedupe("-r " + shell_quote(path("d")));
  EXPECT_NE(r.output.find("Found 0 whole-file and 0 partial"), std::string::npos) << r.output;
  r = btrdedupe("-r -b 64K " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Found 0 whole-file and 1 partial duplicate groups: 65536 to dedupe"),
            std::string::npos)
      << r.output;
  r = btrdedupe("-dr -b64K " + shell_quote(path("d")));
  EXPECT_NE(r.output.find("Deduped 65536 in 1 calls"), std::string::npos) << r.output;
  // b's 64 KiB, and the whole extent of a that holds them (all of a, or a part when
  // writeback cut a in pieces), now count as shared, as FIEMAP would flag them.
  const std::string key = "shared extents of: ";
  const auto at = r.output.rfind(key);
  ASSERT_NE(at, std::string::npos) << r.output;
  const long long net = std::stoll(r.output.substr(at + key.size()));
  EXPECT_GE(net, 2 * 65536) << r.output;
  EXPECT_LE(net, 65536 + 262144) << r.output;
}

TEST_F(CliTest, DedupeOptionsPartialAndWholeFiles) {
  sh("mkdir " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
     " && head -c 262144 /dev/urandom > a && head -c 131072 a > b"
     " && head -c 131072 /dev/urandom >> b && sync");
  for (const char* opt : {"--dedupe-options=nopartial", "--dedupe-options=only_whole_files",
                          "--dedupe-options=same,nopartial"}) {
    const auto r = btrdedupe(std::string("-r ") + opt + " " + shell_quote(path("d")));
    EXPECT_EQ(r.exit_code, 0) << opt << r.output;
    EXPECT_NE(r.output.find("Found 0 whole-file and 0 partial"), std::string::npos) << opt << r.output;
  }
  auto r = btrdedupe("-r --dedupe-options=partial,same " + shell_quote(path("d")));
  EXPECT_NE(r.output.find("Found 0 whole-file and 1 partial"), std::string::npos) << r.output;
  r = btrdedupe("-r --dedupe-options=nosame " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("btrdedupe: note: --dedupe-options=nosame: no effect here"),
            std::string::npos)
      << r.output;
  r = btrdedupe("-r --dedupe-options=fiemap " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(CliTest, CompatibilityFlagsWithoutEffectAreNotedOnceAndTheRunGoesOn) {
  twins("c", 100000);
  const auto r = btrdedupe("-dr --cpu-threads 4 --skip-zeroes -A -x " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* note : {"note: --cpu-threads: no effect here",
                           "note: --skip-zeroes: no effect here", "note: -A: no effect here",
                           "note: -x: no effect here"}) {
    const auto first = r.output.find(note);
    EXPECT_NE(first, std::string::npos) << note << "\n" << r.output;
    EXPECT_EQ(r.output.find(note, first + 1), std::string::npos) << note << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("shared extents of: 204800\n"), std::string::npos) << r.output;
  // -q silences the notes with everything else.
  sh("cp --reflink=never " + shell_quote(path("d/c")) + " " + shell_quote(path("d/c3")) + " && sync");
  const auto q = btrdedupe("-dqr --cpu-threads 4 --skip-zeroes " + shell_quote(path("d")));
  EXPECT_EQ(q.output, "Comparison of extent info shows a net change in shared extents of: 102400\n");
}

// -B N: the tree is read, matched and deduped in windows of N files (duperemove's batches).
TEST_F(CliTest, BatchSizeDedupesInWindows) {
  if (walking()) GTEST_SKIP() << "windows are the tree reader's: a walk reads whole";
  twins("a", 100000);
  twins("b", 200000);
  sh("cp --reflink=never " + shell_quote(path("d/a")) + " " + shell_quote(path("d/a3")) + " && sync");
  const auto r = btrdedupe("-dr -B 2 --json " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"windows\": 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"bytes_deduped\": 400000"), std::string::npos) << r.output;
  // The text report says what a windowed run did with a hashfile: every row written
  // afresh, not "new or changed since the last run".
  sh("cp --reflink=never " + shell_quote(path("d/b")) + " " + shell_quote(path("d/b3")) + " && sync");
  const auto text = btrdedupe("-dr -B 2 --hashfile=" + shell_quote(path("h.hash")) + " " +
                              shell_quote(path("d")));
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("read, matched and deduped in 3 windows of 2 files (-B)"),
            std::string::npos) << text.output;
  EXPECT_NE(text.output.find("Hashfile: rows written afresh for 6 files, read in windows"),
            std::string::npos) << text.output;
  EXPECT_EQ(text.output.find("new or changed since the last run"), std::string::npos)
      << text.output;
  // Its fingerprint figures count the twins each window read back again: it says so.
  EXPECT_NE(text.output.find("s (with the twins each window read back from other windows)\n"),
            std::string::npos) << text.output;
}

TEST_F(CliTest, IoThreads) {
  twins("t", 100000);
  const auto r = btrdedupe("-dr --io-threads 1 " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("s, 1 threads)"), std::string::npos) << r.output;
}

TEST_F(CliTest, ExcludeLeavesFilesAndDirectoriesOut) {
  build_layout("two-copies", "tc");
  const auto r = btrdedupe("-dr --exclude 'b/media/*' --exclude '*.html' --exclude=./b/src " +
                           shell_quote(path("tc")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(shared("tc/b/media/clip-1.bin"));
  EXPECT_FALSE(shared("tc/b/media/raw/big-1.img"));
  EXPECT_FALSE(shared("tc/b/docs/deep/er/est/page-01.html"));
  EXPECT_FALSE(shared("tc/a/docs/deep/er/est/page-02.html"));
  EXPECT_FALSE(shared("tc/b/src/lib/lib-01.o"));
  EXPECT_TRUE(shared("tc/b/misc/dup-src.c"));
  EXPECT_FALSE(shared("tc/a/media/clip-2.bin"));  // its only twin is in b/media
  EXPECT_TRUE(shared("tc/a/media/raw/dup-clip.bin"));  // = a/media/clip-1.bin
  EXPECT_NE(r.output.find("excluded by --exclude: "), std::string::npos) << r.output;
  // An absolute pattern matches the full path.
  const auto abs = btrdedupe("-r --exclude " + shell_quote(path("tc") + "/b") + " " +
                             shell_quote(path("tc")));
  EXPECT_NE(abs.output.find("excluded by --exclude: 60 files"), std::string::npos) << abs.output;
}

TEST_F(CliTest, ExcludePrunesNestedSubvolumes) {
  build_layout("snapshots", "s");
  const auto r = btrdedupe("-dr --exclude snap-rw " + shell_quote(path("s")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("excluded by --exclude: 1 files and subvolumes"), std::string::npos)
      << r.output;
  EXPECT_FALSE(shared("s/snap-rw/added-copy-of-big.bin"));
  EXPECT_NE(r.output.find("shared extents of: 0\n"), std::string::npos) << r.output;
}

TEST_F(CliTest, MinSizePassesOverSmallFiles) {
  twins("small", 100000);
  twins("big", 2 << 20);
  const auto r = btrdedupe("-dr --min-size 1M " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(" 2 small files"), std::string::npos) << r.output;
  EXPECT_TRUE(shared("d/big.copy"));
  EXPECT_FALSE(shared("d/small.copy"));
}

TEST_F(CliTest, DryRunSaysWhatWouldBeDedupedAndChangesNothing) {
  build_layout("two-copies", "tc");
  const auto before = state("tc");
  const auto r = btrdedupe("-dr --dry-run " + shell_quote(path("tc")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Dry run: -d would dedupe 19476456 in "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(path("tc/b/media/raw/big-1.img") + "\t0\t[layout "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("]\tdestination\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("deduped:        nothing (--dry-run)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Comparison of extent info"), std::string::npos) << r.output;
  EXPECT_EQ(state("tc"), before);
  EXPECT_FALSE(shared("tc/b/media/raw/big-1.img"));
}

TEST_F(CliTest, FdupesGroupsFromStdinAreDedupedAsWholeFiles) {
  twins("one", 300000);
  twins("two", 200000);
  sh("cp --reflink=never " + shell_quote(path("d/two")) + " " + shell_quote(path("d/two.unlisted")) +
     " && mkdir " + shell_quote(path("d/sub dir")) + " && cp --reflink=never " +
     shell_quote(path("d/one")) + " " + shell_quote(path("d/sub dir/one again")) + " && sync");
  const std::string list = path("fdupes.txt");
  sh("printf '%s\\n' " + shell_quote(path("d/one")) + " " + shell_quote(path("d/one.copy")) + " " +
     shell_quote(path("d/sub dir/one again")) + " '' " + shell_quote(path("d/two")) + " " +
     shell_quote(path("d/two.copy")) + " > " + shell_quote(list));
  std::string out, err;
  const int code = btrdedupe_split("--fdupes", &out, &err, list);
  EXPECT_EQ(code, 0) << out << err;
  EXPECT_NE(out.find("fdupes input: 2 groups of 2 or more files, 5 files\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("Found 2 whole-file and 0 partial"), std::string::npos) << out;
  EXPECT_NE(out.find("shared extents of: " + std::to_string(3 * 303104 + 2 * 200704) + "\n"),
            std::string::npos)
      << out;
  EXPECT_TRUE(shared("d/one.copy"));
  EXPECT_TRUE(shared("d/sub dir/one again"));
  EXPECT_TRUE(shared("d/two.copy"));
  EXPECT_FALSE(shared("d/two.unlisted"));
  // A listed file that is gone is an error (exit 1), the rest is still deduped.
  sh("cp --reflink=never " + shell_quote(path("d/two")) + " " + shell_quote(path("d/two.4")) +
     " && sync && printf '%s\\n' " + shell_quote(path("d/two")) + " " + shell_quote(path("d/two.4")) +
     " /nonexistent/y > " + shell_quote(list));
  const int code2 = btrdedupe_split("--fdupes -q", &out, &err, list);
  EXPECT_EQ(code2, 1) << out << err;
  // d/two.copy is not in this run's scope: d/two counts as newly shared beside d/two.4.
  EXPECT_EQ(out, "Comparison of extent info shows a net change in shared extents of: 401408\n");
  EXPECT_NE(err.find("btrdedupe: fdupes input: /nonexistent/y: No such file or directory"),
            std::string::npos)
      << err;
}

TEST_F(CliTest, JsonReportIsOneDocumentValidAgainstTheSchema) {
  build_layout("two-copies", "tc");
  std::string out, err;
  const int code = btrdedupe_split("-dr --json " + shell_quote(path("tc")), &out, &err);
  EXPECT_EQ(code, 0) << err;
  const auto j = nlohmann::json::parse(out);  // throws (fails the test) unless one document
  EXPECT_EQ(j["format"], "btrdedupe-report");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["net_shared_change"], 19521536);
  EXPECT_EQ(j["totals"]["files"], 120);
  EXPECT_EQ(j["totals"]["bytes_deduped"], 19476456);
  EXPECT_EQ(j["filesystems"][0]["dedupe"]["bytes_deduped"], 19476456);
  EXPECT_EQ(j["filesystems"][0]["groups_listed"], false);
  EXPECT_EQ(j["options"]["dedupe"], true);
  EXPECT_EQ(err, "");
  // Validate with python3-jsonschema against docs/json-report.schema.json.
  const std::string schema = std::string(BTRDEDUPE_FIXTURES_DIR) + "/../docs/json-report.schema.json";
  const std::string doc = path("report.json");
  auto validate = [&](const std::string& json_text) {
    {
      std::ofstream f(doc);
      f << json_text;
    }
    return run_command("python3 -c 'import json,sys,jsonschema; s=json.load(open(sys.argv[1]));"
                       " jsonschema.Draft202012Validator.check_schema(s);"
                       " jsonschema.Draft202012Validator(s).validate(json.load(open(sys.argv[2])));"
                       " print(\"valid\")' " +
                       shell_quote(schema) + " " + shell_quote(doc));
  };
  auto v = validate(out);
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.output, "valid\n");
  // Without -d (groups listed, odd names), and a report the schema must reject.
  build_layout("odd-names", "on");
  const int code2 = btrdedupe_split("-r --json " + shell_quote(path("on")), &out, &err);
  EXPECT_EQ(code2, 0) << err;
  const auto j2 = nlohmann::json::parse(out);
  EXPECT_EQ(j2["filesystems"][0]["groups"].size(), 11u);
  EXPECT_TRUE(j2["filesystems"][0]["dedupe"].is_null());
  EXPECT_NE(out.find("\"path_hex\""), std::string::npos);  // the invalid-UTF-8 name
  v = validate(out);
  EXPECT_EQ(v.output, "valid\n");
  EXPECT_TRUE(j2["filesystems"][0]["catalog"].is_null());
  // With a hashfile: what it saved is reported, and the report still validates.
  const int code3 = btrdedupe_split("-dr --json --hashfile=" + shell_quote(path("h.hash")) + " " +
                                        shell_quote(path("on")),
                                    &out, &err);
  EXPECT_EQ(code3, 0) << err;
  const auto j3 = nlohmann::json::parse(out);
  EXPECT_EQ(j3["filesystems"][0]["catalog"]["files_changed"], 22) << out;
  v = validate(out);
  EXPECT_EQ(v.output, "valid\n");
  auto broken = j2;
  broken["totals"].erase("files");
  v = validate(broken.dump());
  EXPECT_NE(v.exit_code, 0) << "the schema accepted a report without totals.files";
}

TEST_F(CliTest, ProgressJsonEventsOnStderr) {
  twins("p", 1 << 20);
  std::string out, err;
  const int code = btrdedupe_split("-dqr --progress=json " + shell_quote(path("d")), &out, &err);
  EXPECT_EQ(code, 0) << err;
  EXPECT_EQ(out, "Comparison of extent info shows a net change in shared extents of: 2097152\n");
  std::istringstream in(err);
  std::vector<std::string> phases;
  nlohmann::json last;
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line);  // every line is one JSON object
    ASSERT_TRUE(e.contains("event")) << line;
    if (e["event"] == "phase") phases.push_back(e["phase"]);
    if (e["event"] == "end" && e["phase"] == "dedupe") {
      EXPECT_EQ(e["done"], 1048576);
      EXPECT_EQ(e["total"], 1048576);
    }
    last = e;
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"scan", "fingerprint", "match", "dedupe", "confirm"}))
      << err;
  EXPECT_EQ(last["event"], "finish");
  EXPECT_EQ(last["exit_code"], 0);
  EXPECT_EQ(last["net_shared_change"], 1048576);
}

TEST_F(CliTest, ProgressLineOnATerminalOnly) {
  twins("p", 4 << 20);
  // script(1) gives the program a pseudo-terminal: progress appears by itself.
  const auto tty = sh("script -qec " +
                      shell_quote(binary() + " -dr " + shell_quote(path("d"))) +
                      " /dev/null");
  EXPECT_NE(tty.find("\r\033[Kfingerprint"), std::string::npos) << tty;
  EXPECT_NE(tty.find("\r\033[Kdedupe 100% · "), std::string::npos) << tty;
  EXPECT_NE(tty.find("ETA "), std::string::npos) << tty;
  EXPECT_NE(tty.find("shared extents of: 8388608"), std::string::npos) << tty;
  // -q silences it on a terminal, even when asked for.
  const auto quiet = sh("script -qec " +
                        shell_quote(binary() + " -dqr --progress=tty " +
                                    shell_quote(path("d"))) +
                        " /dev/null");
  EXPECT_EQ(quiet.find("\033[K"), std::string::npos) << quiet;
  // Not a terminal: nothing unless asked for with --progress=tty.
  sh("cp --reflink=never " + shell_quote(path("d/p")) + " " + shell_quote(path("d/p3")) + " && sync");
  auto r = btrdedupe("-dr " + shell_quote(path("d")));
  EXPECT_EQ(r.output.find("\033[K"), std::string::npos) << r.output;
  r = btrdedupe("-r --progress=tty " + shell_quote(path("d")));
  EXPECT_NE(r.output.find("\r\033[Kscan"), std::string::npos) << r.output;
  r = btrdedupe("-r --progress=none " + shell_quote(path("d")));
  EXPECT_EQ(r.output.find("\033[K"), std::string::npos) << r.output;
}

TEST_F(CliTest, ScriptWrittenForDuperemoveWorksUnchanged) {
  twins("s", 1 << 20);
  // A typical nightly script, run with a "duperemove" that is btrdedupe.
  sh("mkdir " + shell_quote(path("bin")) + " && ln -s " + BTRDEDUPE_BINARY + " " +
     shell_quote(path("bin/duperemove")));
  const std::string script = path("nightly.sh");
  {
    std::ofstream f(script);
    f << "#!/bin/sh\nset -e\n"
         "out=$(duperemove -dr --hashfile=\"$1\" \"$2\")\n"
         "saved=$(printf '%s\\n' \"$out\" | awk -F': ' '/^Comparison of extent info shows a net "
         "change in shared extents of/ {print $2}')\n"
         "echo \"saved=$saved\"\n";
  }
  const auto r = run_command("PATH=" + shell_quote(path("bin")) + ":$PATH sh " + shell_quote(script) +
                             " " + shell_quote(path("nightly.hash")) + " " + shell_quote(path("d")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("saved=2097152\n"), std::string::npos) << r.output;
  EXPECT_TRUE(shared("d/s.copy"));
  const auto hashfile_notes = [&] {
    size_t n = 0;
    for (auto p = r.output.find("--hashfile"); p != std::string::npos; p = r.output.find("--hashfile", p + 1)) ++n;
    return n;
  }();
  EXPECT_LE(hashfile_notes, 1u) << r.output;
  // Run again, as the script would the next night: the hashfile is reused, nothing left to do.
  const auto again = run_command("PATH=" + shell_quote(path("bin")) + ":$PATH sh " +
                                 shell_quote(script) + " " + shell_quote(path("nightly.hash")) +
                                 " " + shell_quote(path("d")));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("saved=0\n"), std::string::npos) << again.output;
}

TEST_F(CliTest, RefusedRangesFinishWithExitThree) {
  twins("i", 200000);
  sh("chattr +i " + shell_quote(path("d/i")) + " " + shell_quote(path("d/i.copy")));
  const auto r = btrdedupe("-dr " + shell_quote(path("d")));
  sh("chattr -i " + shell_quote(path("d/i")) + " " + shell_quote(path("d/i.copy")));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("not permitted (immutable or append-only file?)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 refused by the kernel; 1 not permitted (immutable or append-only "
                          "file?) (EPERM)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("shared extents of: 0\n"), std::string::npos) << r.output;
  // -q: the error and the summary line only.
  sh("chattr +i " + shell_quote(path("d/i")) + " " + shell_quote(path("d/i.copy")));
  const auto q = btrdedupe("-dqr " + shell_quote(path("d")));
  sh("chattr -i " + shell_quote(path("d/i")) + " " + shell_quote(path("d/i.copy")));
  EXPECT_EQ(q.exit_code, 3);
  EXPECT_EQ(std::count(q.output.begin(), q.output.end(), '\n'), 2) << q.output;
  EXPECT_NE(q.output.find("btrdedupe: " + path("d/i")), std::string::npos) << q.output;
}

// Many small rounds, so a signal sent when the dedupe phase begins lands mid-way.
class CliSignalTest : public CliTest {
 protected:
  void many_twins() {
    sh("mkdir -p " + shell_quote(path("d/a")) + " && cd " + shell_quote(path("d/a")) +
       " && head -c 24576000 /dev/urandom | split -b 8192 -a 4 - f && cd .. "
       " && cp -r --reflink=never a b && sync");
  }
  // Runs -dr with JSON progress in the background; signals it when the dedupe phase starts.
  CommandResult run_and_signal(const std::string& sig) {
    const std::string ev = path("events"), out = path("out");
    return run_command(
        binary() + " -dr --io-threads 1 --progress=json " + shell_quote(path("d")) +
        " >" + shell_quote(out) + " 2>" + shell_quote(ev) + " & pid=$!;"
        " for i in $(seq 3000); do grep -q '\"phase\":\"dedupe\"' " + shell_quote(ev) +
        " && break; sleep 0.01; done; kill -" + sig + " $pid; wait $pid; echo \"rc=$?\"; cat " +
        shell_quote(out) + " " + shell_quote(ev));
  }
};

TEST_F(CliSignalTest, SigintStopsCleanlyWith130) {
  many_twins();
  const auto r = run_and_signal("INT");
  EXPECT_NE(r.output.find("rc=130\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped:        on SIGINT"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(stopped early)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Comparison of extent info shows a net change in shared extents of: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"event\":\"finish\",\"exit_code\":130,\"stopped\":true"), std::string::npos)
      << r.output;
  EXPECT_EQ(sh("cd " + shell_quote(path("d")) + " && diff -r a b && echo same"), "same\n");
}

TEST_F(CliSignalTest, SigtermStopsCleanlyWith143) {
  many_twins();
  const auto r = run_and_signal("TERM");
  EXPECT_NE(r.output.find("rc=143\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped:        on SIGTERM"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Comparison of extent info shows a net change in shared extents of: "),
            std::string::npos)
      << r.output;
}


// The installed extras: systemd units and shell completion.
std::string build_dir() {
  const std::string bin = BTRDEDUPE_BINARY;
  return bin.substr(0, bin.rfind('/'));
}

TEST(CliDist, SystemdUnitsVerify) {
  if (run_command("command -v systemd-analyze").exit_code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed";
  const std::string unit = build_dir() + "/dist/btrdedupe@.service";
  const std::string timer = std::string(BTRDEDUPE_FIXTURES_DIR) + "/../dist/systemd/btrdedupe@.timer";
  const std::string text = read_file(unit);
  EXPECT_NE(text.find("btrdedupe -dr --hashfile=/var/lib/btrdedupe/%i.hash"), std::string::npos);
  for (const char* line : {"IOSchedulingClass=idle\n", "CPUSchedulingPolicy=idle\n", "Nice=19\n",
                           "EnvironmentFile=/etc/btrdedupe/%i.conf\n", "SuccessExitStatus=3 4\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
  // Verified as installed, but with the binary of this build.
  const auto r = run_command(
      "d=$(mktemp -d) && sed 's|^ExecStart=[^ ]*/btrdedupe |ExecStart=" + std::string(BTRDEDUPE_BINARY) +
      " |' " + shell_quote(unit) + " > \"$d/btrdedupe@.service\" && cp " + shell_quote(timer) +
      " \"$d/\" && cd \"$d\" && systemd-analyze verify --man=no ./btrdedupe@share.service"
      " ./btrdedupe@share.timer; rc=$?; rm -r \"$d\"; exit $rc");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST(CliDist, FollowServiceVerifies) {
  if (run_command("command -v systemd-analyze").exit_code != 0)
    GTEST_SKIP() << "systemd-analyze is not installed";
  const std::string unit = build_dir() + "/dist/btrdedupe-follow@.service";
  const std::string text = read_file(unit);
  EXPECT_NE(text.find("btrdedupe --follow --hashfile=/var/lib/btrdedupe/%i.hash"),
            std::string::npos);
  for (const char* line : {"Type=simple\n", "ExecReload=/bin/kill -HUP $MAINPID\n",
                           "EnvironmentFile=/etc/btrdedupe/%i.conf\n", "Restart=on-failure\n",
                           "IOSchedulingClass=idle\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
  const auto r = run_command(
      "d=$(mktemp -d) && sed 's|^ExecStart=[^ ]*/btrdedupe |ExecStart=" + std::string(BTRDEDUPE_BINARY) +
      " |' " + shell_quote(unit) + " > \"$d/btrdedupe-follow@.service\" && cd \"$d\" && "
      "systemd-analyze verify --man=no ./btrdedupe-follow@share.service; rc=$?; rm -r \"$d\"; exit $rc");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST(CliDist, BashCompletion) {
  const std::string script = std::string(BTRDEDUPE_FIXTURES_DIR) + "/../dist/completion/btrdedupe.bash";
  auto complete = [&](const std::string& words) {
    return run_command("bash -c " + shell_quote("source " + shell_quote(script) +
                                                 "; COMP_WORDS=(btrdedupe " + words +
                                                 "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
                                                 "_btrdedupe; echo \"${COMPREPLY[*]}\""))
        .output;
  };
  EXPECT_EQ(complete("--progress=j"), "json\n");
  EXPECT_EQ(complete("--progress t"), "tty\n");
  EXPECT_EQ(complete("--dedupe-options=same,nop"), "same,nopartial\n");
  EXPECT_EQ(complete("--dry"), "--dry-run\n");
  EXPECT_EQ(complete("--skip"), "--skip-zeroes\n");
  // Every option of --help can be completed.
  const auto help = run_command(binary() + " --help").output;
  for (const char* opt : {"--dedupe", "--recursive", "--exclude", "--fdupes", "--json", "--progress",
                          "--hashfile", "--min-size", "--io-threads", "--cpu-threads", "--batchsize",
                          "--follow", "--settle", "--poll-interval", "--stall-limit", "--no-yield",
                          "--max-read-rate", "--status", "--max-runtime"}) {
    EXPECT_NE(help.find(opt), std::string::npos) << opt;
    EXPECT_NE(complete(opt).find(opt), std::string::npos) << opt;
  }
  EXPECT_EQ(complete("--max-read-rate 5"), "50M\n");
  EXPECT_EQ(complete("--reader=p"), "paths\n");
  EXPECT_NE(help.find("--reader"), std::string::npos);
  const std::string zsh = std::string(BTRDEDUPE_FIXTURES_DIR) + "/../dist/completion/_btrdedupe";
  EXPECT_EQ(read_file(zsh).rfind("#compdef btrdedupe\n", 0), 0u);
}

}  // namespace
}  // namespace btrdedupe::test
