// Rewriting small remainders (src/dedupe/remainder_rewrite.h) on real btrfs: the rewrite is what
// frees a destination's extent kept alive by a small unique tail, by as much as
// `btrfs filesystem df` shows; norewrite leaves it; a full filesystem, nodatacow and
// compressed files, and a SIGKILL in the middle of the rewrite leave every file as it was.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/btrfs/cli_fixture.h"
#include "tests/btrfs/reliability_support.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

class RemainderRewriteTest : public CliTest {
 protected:
  void TearDown() override {
    sh("rm -rf " + shell_quote(work("")));
    CliTest::TearDown();
  }
  // Outside the image: the random data files are made from, so making them does not
  // change its figures.
  std::string work(const std::string& name) {
    const std::string dir = "/tmp/btrdedupe-rewrite-test-" + std::to_string(::getpid());
    sh("mkdir -p " + shell_quote(dir));
    return dir + "/" + name;
  }
  // A work file of `bytes` random bytes.
  std::string random(const std::string& name, uint64_t bytes) {
    const auto p = work(name);
    sh("head -c " + std::to_string(bytes) + " /dev/urandom > " + shell_quote(p));
    return p;
  }
  // d/<name>: the bytes of `pieces` (work files, each `head -c` of one) one after another,
  // written with one O_DIRECT write so that the file is one extent (GNU dd writes a final
  // partial block buffered: a length that is not a sector multiple is all written through
  // the page cache). Under memory pressure, or with free space in pieces, btrfs may still
  // split it: then it is written again, a few times at most, until the tree holds one item
  // for it (CliTest::extent_items: two adjacent items make the remainder a larger share of
  // its extent than the rule allows).
  void one_extent(const std::string& name, const std::vector<std::pair<std::string, uint64_t>>& pieces,
                  const std::string& before_writing = "") {
    const auto joined = work(name + ".joined");
    std::string cmd = "{";
    for (const auto& [file, bytes] : pieces)
      cmd += " head -c " + std::to_string(bytes) + " " + shell_quote(file) + ";";
    cmd += " } > " + shell_quote(joined);
    const auto dst = shell_quote(path("d/" + name));
    sh("mkdir -p " + shell_quote(path("d")) + " && " + cmd);
    for (int attempt = 0; attempt < 5; ++attempt) {
      sh("rm -f " + dst + " && touch " + dst +
         (before_writing.empty() ? "" : " && " + before_writing + " " + dst) +
         " && dd if=" + shell_quote(joined) + " of=" + dst +
         " bs=8M iflag=fullblock oflag=direct conv=notrunc status=none; "
         // should dd have stopped short, the rest is appended
         "s=$(stat -c %s " + dst + "); t=$(stat -c %s " + shell_quote(joined) + "); "
         "[ $s -eq $t ] || tail -c +$((s + 1)) " + shell_quote(joined) + " >> " + dst +
         "; sync");
      if (extent_items("d/" + name) == 1) break;
    }
    ASSERT_EQ(extent_items("d/" + name), 1u) << sh("filefrag -v " + dst);
  }
  // a: 4 MiB in one extent; b: a's first 3.5 MiB and 512 KiB of its own, in one extent;
  // c: a's first 3.5 MiB and 512 KiB - 100 bytes of its own (an unaligned EOF). c is
  // written whole sectors with O_DIRECT and then cut: an unaligned tail written by dd goes
  // through the page cache, and writeback may give it an extent of its own.
  void tails() {
    const auto r = random("r", 4 * kMiB), u = random("u", kMiB / 2), v = random("v", kMiB / 2);
    one_extent("a", {{r, 4 * kMiB}});
    one_extent("b", {{r, 3 * kMiB + kMiB / 2}, {u, kMiB / 2}});
    one_extent("c", {{r, 3 * kMiB + kMiB / 2}, {v, kMiB / 2}});
    sh("truncate -s " + std::to_string(4 * kMiB - 100) + " " + shell_quote(path("d/c")) + " && sync");
  }
  // Runs `btrdedupe args --json d`: the report, its exit code in *code, Data used's drop
  // in *df_freed.
  nlohmann::json run(const std::string& args, int64_t* df_freed, int* code = nullptr,
                     std::string* err_out = nullptr) {
    const uint64_t before = data_used();
    // Its output goes outside the image, which may be full.
    const auto o = work("stdout"), e = work("stderr");
    const int c = run_command(std::string(BTRDEDUPE_BINARY) + " " + args + " --json " +
                              shell_quote(path("d")) + " </dev/null >" + shell_quote(o) +
                              " 2>" + shell_quote(e))
                      .exit_code;
    const std::string out = read_file(o), err = read_file(e);
    if (code) *code = c;
    else EXPECT_EQ(c, 0) << out << err;
    if (err_out) *err_out = err;
    *df_freed = static_cast<int64_t>(before) - static_cast<int64_t>(data_used());
    return nlohmann::json::parse(out);
  }
  // Every file on the filesystem (names, sizes, mtimes, contents).
  TreeState everything() { return tree_state(path(""), nullptr); }
  int extents(const std::string& rel) {
    return std::stoi(sh("filefrag " + shell_quote(path(rel)) + " | sed 's/.*: \\([0-9]*\\) extent.*/\\1/'"));
  }
  // The files' regular extent items, counted in the top subvolume's tree as btrfs-progs
  // dumps it from the committed image: the figure the report's extent counts must equal.
  // (filefrag merges physically adjacent extents, and a write that a concurrent sync
  // split has two.)
  int tree_extents(const std::vector<std::string>& rels) {
    std::string inodes;
    for (const auto& rel : rels)
      inodes += " " + std::to_string(std::stoull(sh("stat -c %i " + shell_quote(path(rel)))));
    sh("btrfs filesystem sync " + shell_quote(path("")));
    const auto out = sh(
        "btrfs inspect-internal dump-tree -t 5 " + shell_quote(fs().image_file()) +
        " | awk -v want='" + inodes + "' '"
        "BEGIN { n = split(want, w, / +/);"
        "  for (i = 1; i <= n; i++) if (w[i] != \"\") keep[w[i]] = 1 }"
        "/ key \\([0-9]+ EXTENT_DATA / {"
        "  split($0, k, /[( ]+/); for (i in k) if (k[i] == \"key\") cur = k[i + 1] }"
        "/extent data disk byte / { if ((cur in keep) && $5 != 0) c++ }"
        "END { print c + 0 }'");
    return std::stoi(out);
  }
  // Whether every extent of d/<name> starts at a multiple of 128 KiB in the file (filefrag
  // -v counts 4 KiB blocks): the layout compressed buffered writes have when nothing
  // flushed the file half-written.
  bool extents_start_at_128k(const std::string& name) {
    const auto out = sh("filefrag -v " + shell_quote(path("d/" + name)) +
                        " | awk '/^ *[0-9]+:/ { sub(/\\.\\..*/, \"\", $2); if ($2 % 32) bad = 1 }"
                        " END { print bad ? 0 : 1 }'");
    return out == "1\n";
  }
};

// b's and c's old extents stay alive for their unique tails: plain dedupe frees nothing,
// the rewrite frees them less what it writes (512 KiB each: c's 512 KiB - 100 bytes take a
// whole last sector). The report's figure is Data used's drop exactly: every size here is
// a sector multiple.
TEST_F(RemainderRewriteTest, RewritingTheTailFreesTheExtent) {
  tails();
  const auto before = everything();
  int64_t df = 0;
  const auto dry = run("-r", &df);
  EXPECT_EQ(dry["totals"]["would_free_bytes"], 2 * (4 * kMiB - kMiB / 2));
  EXPECT_EQ(dry["filesystems"][0]["rewrite"]["planned_extents"], 2);
  EXPECT_EQ(dry["filesystems"][0]["rewrite"]["planned_bytes"], kMiB - 100);
  EXPECT_EQ(df, 0);

  const auto j = run("-dr", &df);
  const auto& w = j["filesystems"][0]["rewrite"];
  EXPECT_EQ(w["extents_rewritten"], 2) << w.dump();
  EXPECT_EQ(w["ranges_rewritten"], 2);
  EXPECT_EQ(w["bytes_written"], kMiB - 100);
  EXPECT_EQ(w["disk_bytes_allocated"], kMiB);
  EXPECT_EQ(w["ranges_fell_back"], 0);
  EXPECT_TRUE(w["fallback_reason"].is_null());
  EXPECT_EQ(df, static_cast<int64_t>(2 * (4 * kMiB - kMiB / 2)));
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  EXPECT_EQ(j["totals"]["bytes_rewritten"], kMiB - 100);
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(state_diff(before, everything()), "");  // nothing new, nothing changed
  EXPECT_EQ(extents("d/b"), 2);  // a's extent and the rewritten tail
  // b and c: one extent each before (c's buffered write may be two items), two each after:
  // a's extent for the head, the rewritten tail.
  const auto& space = j["filesystems"][0]["space"];
  EXPECT_GE(space["destination_extents_before"], 2);
  const int after = tree_extents({"d/b", "d/c"});
  EXPECT_GE(after, 4);
  EXPECT_EQ(space["destination_extents_after"], after);
  EXPECT_EQ(dry["filesystems"][0]["space"]["destination_extents_after"],
            dry["filesystems"][0]["space"]["destination_extents_before"]);
}

// Read in windows of one file (-B 1): each window plans and rewrites its own remainders,
// and the figures add up to what df shows.
TEST_F(RemainderRewriteTest, WindowedRunsRewriteToo) {
  tails();
  const auto before = everything();
  int64_t df = 0;
  const auto j = run("-dr -B 1", &df);
  EXPECT_GT(j["filesystems"][0]["scan"]["windows"], 1);
  EXPECT_EQ(j["filesystems"][0]["rewrite"]["extents_rewritten"], 2)
      << j["filesystems"][0]["rewrite"].dump();
  EXPECT_EQ(df, static_cast<int64_t>(2 * (4 * kMiB - kMiB / 2)));
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  EXPECT_EQ(state_diff(before, everything()), "");
}

TEST_F(RemainderRewriteTest, NorewriteLeavesTheRemainder) {
  tails();
  const auto before = everything();
  int64_t df = 0;
  const auto j = run("-dr --dedupe-options=norewrite", &df);
  EXPECT_EQ(j["options"]["rewrite"], false);
  EXPECT_EQ(j["totals"]["bytes_deduped"], 2 * (3 * kMiB + kMiB / 2));
  EXPECT_EQ(j["filesystems"][0]["rewrite"]["planned_extents"], 0);
  EXPECT_EQ(j["totals"]["bytes_rewritten"], 0);
  EXPECT_EQ(df, 0);
  EXPECT_EQ(j["totals"]["freed_bytes"], 0);
  EXPECT_EQ(state_diff(before, everything()), "");
}

// The text report says what was written.
TEST_F(RemainderRewriteTest, TheTextReportSaysWhatWasWritten) {
  tails();
  std::string out, err;
  ASSERT_EQ(btrdedupe_split("-dr " + shell_quote(path("d")), &out, &err), 0) << err;
  EXPECT_TRUE(has(out, "Rewrote 2 small remainders (1048476 written, 1048576 in new extents"))
      << out;
  EXPECT_EQ(err, "");
}

// nodatacow files: the copy must be nodatacow too, or the kernel refuses to share it
// (EINVAL). Rewritten, the files are still nodatacow and unchanged.
TEST_F(RemainderRewriteTest, NodatacowFilesAreRewrittenAsNodatacow) {
  const auto r = random("r", 4 * kMiB), u = random("u", kMiB / 2);
  one_extent("a", {{r, 4 * kMiB}}, "chattr +C");
  one_extent("b", {{r, 3 * kMiB + kMiB / 2}, {u, kMiB / 2}}, "chattr +C");
  ASSERT_TRUE(has(sh("lsattr " + shell_quote(path("d/b"))), "C"));
  const auto before = everything();
  int64_t df = 0;
  const auto j = run("-dr", &df);
  EXPECT_EQ(j["filesystems"][0]["rewrite"]["extents_rewritten"], 1)
      << j["filesystems"][0]["rewrite"].dump();
  EXPECT_EQ(df, static_cast<int64_t>(4 * kMiB - kMiB / 2));
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  EXPECT_TRUE(has(sh("lsattr " + shell_quote(path("d/b"))), "C"));
  EXPECT_EQ(state_diff(before, everything()), "");
}

// Files with the btrfs.compression property (the directory and the mount have none): the
// copy gets it, so the rewritten tail is a compressed extent (FIEMAP's "encoded").
TEST_F(RemainderRewriteTest, CompressedFilesAreRewrittenCompressed) {
  const auto text = work("text"), other = work("other");
  sh("seq 1 2000000 > " + shell_quote(text) + " && yes 'another line, its own' | head -c 65536 > " +
     shell_quote(other));
  // Compressed extents hold 128 KiB each: b's last one is 96 KiB of a's and 32 KiB of its own.
  const uint64_t equal = 3 * kMiB + kMiB / 2 + 96 * kKiB;
  const auto a = work("a"), b = work("b");
  sh("head -c " + std::to_string(4 * kMiB) + " " + shell_quote(text) + " > " + shell_quote(a) +
     " && { head -c " + std::to_string(equal) + " " + shell_quote(text) + "; head -c " +
     std::to_string(32 * kKiB) + " " + shell_quote(other) + "; } > " + shell_quote(b));
  sh("mkdir -p " + shell_quote(path("d")));
  // Written whole into the image, then flushed: a sync of another test's in the middle of
  // the buffered write would cut the compressed extents elsewhere, so that b's last extent
  // might hold only its own 32 KiB. Then the file is written again.
  for (const char* f : {"a", "b"}) {
    const auto dst = shell_quote(path(std::string("d/") + f));
    for (int attempt = 0; attempt < 5; ++attempt) {
      sh("rm -f " + dst + " && touch " + dst + " && btrfs property set " + dst +
         " compression zstd && cat " + shell_quote(work(f)) + " > " + dst +
         " && btrfs filesystem sync " + shell_quote(path("")));
      if (extents_start_at_128k(f)) break;
    }
    ASSERT_TRUE(extents_start_at_128k(f)) << sh("filefrag -v " + dst);
  }
  // The source is either file; the other's last extent is rewritten.
  const auto last_extent = [&](const char* f) {
    return sh("filefrag -v " + shell_quote(path(std::string("d/") + f)) +
              " | grep -E '^ *[0-9]+:' | tail -1");
  };
  ASSERT_TRUE(has(last_extent("a"), "encoded")) << last_extent("a");
  ASSERT_TRUE(has(last_extent("b"), "encoded")) << last_extent("b");
  const auto before = everything();
  int64_t df = 0;
  const auto j = run("-dr -b 32K", &df);
  const auto& w = j["filesystems"][0]["rewrite"];
  EXPECT_EQ(w["extents_rewritten"], 1) << w.dump();
  EXPECT_EQ(w["bytes_written"], 32 * kKiB);
  EXPECT_LT(w["disk_bytes_allocated"], 32 * kKiB);  // compressed
  EXPECT_TRUE(has(last_extent("a"), "encoded")) << last_extent("a");
  EXPECT_TRUE(has(last_extent("b"), "encoded")) << last_extent("b");
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  EXPECT_GT(df, 0);
  for (const char* f : {"a", "b"})
    EXPECT_EQ(sh("btrfs property get " + shell_quote(path(std::string("d/") + f)) + " compression"),
              "compression=zstd\n");
  EXPECT_EQ(state_diff(before, everything()), "");
}

class FullRemainderRewriteTest : public RemainderRewriteTest {
  ImageOptions image_options() const override {
    ImageOptions o;
    o.size_bytes = 1ULL << 30;
    return o;
  }
};

// Data space full (metadata not): the rounds share what they can, the copies meet ENOSPC,
// and the run ends as plain dedupe would, exit 0, saying once that it fell back.
TEST_F(FullRemainderRewriteTest, AFullFilesystemFallsBackToPlainDedupe) {
  tails();
  // Fill the data space with preallocated files (no data written), largest pieces first.
  run_command("cd " + shell_quote(path("")) + " && i=0; for size in 64M 4M 256K 4K; do "
              "while fallocate -l $size fill$i 2>/dev/null; do i=$((i+1)); done; rm -f fill$i; done; sync");
  const auto r = run_command("head -c 1M /dev/zero > " + shell_quote(path("probe")) + " && sync");
  ASSERT_TRUE(has(r.output, "No space left on device")) << r.output;
  sh("rm -f " + shell_quote(path("probe")) + " && sync");
  const auto before = everything();
  int64_t df = 0;
  int code = -1;
  std::string err;
  const auto j = run("-dr", &df, &code, &err);
  EXPECT_EQ(code, 0) << err;
  const auto& w = j["filesystems"][0]["rewrite"];
  EXPECT_EQ(w["extents_rewritten"], 0) << w.dump();
  EXPECT_EQ(w["ranges_fell_back"], 2) << w.dump();
  EXPECT_TRUE(has(w["fallback_reason"].get<std::string>(), "No space left on device")) << w.dump();
  EXPECT_EQ(j["totals"]["bytes_deduped"], 2 * (3 * kMiB + kMiB / 2));
  EXPECT_EQ(j["totals"]["freed_bytes"], 0);
  EXPECT_EQ(df, 0);
  EXPECT_EQ(state_diff(before, everything()), "");
}

// Killed (SIGKILL) while rewriting: the copies were never linked, so nothing is left
// anywhere, every file is as it was, and `btrfs check` finds the filesystem clean.
TEST_F(RemainderRewriteTest, SigkillDuringTheRewriteLeavesNothingBehind) {
  // 48 pairs of 1 MiB files, each second one with a unique last 256 KiB: 48 remainders.
  const auto r = random("r", 48 * kMiB), u = random("u", 48 * kMiB / 4);
  std::string cmd = "mkdir -p " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
                    " && for i in $(seq 0 47); do "
                    "dd if=" + shell_quote(r) + " of=a$i bs=1M skip=$i count=1 oflag=direct status=none && "
                    "{ dd if=" + shell_quote(r) + " bs=256K skip=$((i*4)) count=3 status=none; "
                    "dd if=" + shell_quote(u) + " bs=256K skip=$i count=1 status=none; } > " +
                    shell_quote(work("b")) + " && dd if=" + shell_quote(work("b")) +
                    " of=b$i bs=1M oflag=direct status=none; done && sync";
  sh(cmd);
  const auto before = everything();
  const auto output = work("child-output");
  Child child({BTRDEDUPE_BINARY, "-dr", "--progress=json", path("d")}, output);
  // The rewrite phase begins with its progress event; then it has 48 copies to make.
  while (child.running() && !has(child.output(), "\"phase\":\"rewrite\"")) ::usleep(1000);
  child.kill(SIGKILL);
  const int status = child.wait();
  EXPECT_EQ(status, -SIGKILL) << child.output();
  EXPECT_TRUE(has(child.output(), "\"phase\":\"rewrite\"")) << child.output();
  EXPECT_EQ(state_diff(before, everything()), "");
  std::string report;
  EXPECT_TRUE(fs().check_unmounted(&report)) << report;
  EXPECT_EQ(state_diff(before, everything()), "");  // and after the mount again
}

}  // namespace
}  // namespace btrdedupe::test
