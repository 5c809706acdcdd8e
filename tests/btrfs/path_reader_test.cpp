// The path reader (src/read/path_walk.h) end to end, through the binary: on XFS as root,
// and on btrfs as an ordinary user who owns the trees. Each run's freed figure is checked
// against the filesystem's own count (df on XFS, btrfs filesystem df on btrfs), and every
// file's content and mtime against what they were.
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

// The ordinary user the non-root runs take (made once, left for later runs).
constexpr const char* kUser = "btrdedupe-test";

// A real tree to copy: the compiler's C++ headers (installed with g++, ~12 MiB, ~1,500
// files, a few nested directories), twice, unshared.
constexpr const char* kRealTree = "/usr/include/c++";

class PathReaderRuns : public CliTest {
 protected:
  void copies(const std::string& dir) {
    sh("mkdir -p " + shell_quote(path(dir)) + " && cp -a --reflink=never " + kRealTree + " " +
       shell_quote(path(dir + "/a")) + " && cp -a --reflink=never " +
       shell_quote(path(dir + "/a")) + " " + shell_quote(path(dir + "/b")) + " && sync");
  }
  nlohmann::json run_json(const std::string& args, int expected_code = 0,
                          const std::string& as = "") {
    std::string out, err;
    const std::string prefix =
        as.empty() ? "" : "--reuid=" + as + " --regid=" + as + " --clear-groups -- ";
    const int code = as.empty() ? btrdedupe_split(args + " --json", &out, &err)
                                : run_as(prefix, args + " --json", &out, &err);
    EXPECT_EQ(code, expected_code) << err;
    last_err_ = err;
    return out.empty() ? nlohmann::json{} : nlohmann::json::parse(out);
  }
  int run_as(const std::string& setpriv, const std::string& args, std::string* out,
             std::string* err) {
    const auto o = "/tmp/btrdedupe-user-out." + std::to_string(::getpid());
    const auto e = o + ".err";
    const auto r = run_command("setpriv " + setpriv + BTRDEDUPE_BINARY + " " + args + " >" + o +
                               " 2>" + e);
    *out = read_file(o);
    *err = read_file(e);
    ::unlink(o.c_str());
    ::unlink(e.c_str());
    return r.exit_code;
  }
  static uint64_t freed(const nlohmann::json& j) { return j["totals"]["freed_bytes"]; }
  static bool noted(const nlohmann::json& j, const std::string& words) {
    for (const auto& n : j["notes"])
      if (n.get<std::string>().find(words) != std::string::npos) return true;
    return false;
  }
  std::string last_err_;
};

class XfsPathReaderTest : public PathReaderRuns {
 protected:
  ImageOptions image_options() const override {
    ImageOptions o;
    o.fs_type = "xfs";
    return o;
  }
  // Bytes in use as df counts them, once settled: XFS frees blocks in the background
  // (inode and block garbage collection), so two readings a moment apart must agree.
  uint64_t df_used() {
    uint64_t last = ~0ULL;
    for (int i = 0; i < 40; ++i) {
      sh("sync -f " + shell_quote(path("")));
      struct statvfs st {};
      EXPECT_EQ(::statvfs(path("").c_str(), &st), 0);
      const uint64_t used = (st.f_blocks - st.f_bfree) * st.f_frsize;
      if (used == last) return used;
      last = used;
      ::usleep(250000);
    }
    return last;
  }
  // The freed figure is never more than df shows; df also counts the metadata a dedupe
  // adds (XFS's reference-count tree), a few blocks.
  static void expect_df_agrees(uint64_t freed, uint64_t gone) {
    EXPECT_LE(freed, gone);
    EXPECT_LE(gone - std::min(freed, gone), 64u * 1024) << "freed " << freed << ", df " << gone;
  }
};

TEST_F(XfsPathReaderTest, DedupesTwoCopiesOfARealTreeAndFreesWhatDfShows) {
  copies("t");
  const auto before = state("t");
  const uint64_t used = df_used();
  const auto j = run_json("-dr " + shell_quote(path("t")));
  EXPECT_EQ(j["reader"], "paths");
  EXPECT_TRUE(noted(j, "reading by paths (xfs has no trees to search)")) << j["notes"];
  const uint64_t gone = used - df_used();
  expect_df_agrees(freed(j), gone);
  const uint64_t tree_bytes = std::stoull(sh("du -sb --apparent-size " + shell_quote(path("t/a")) +
                                             " | cut -f1"));
  EXPECT_GT(gone, tree_bytes * 8 / 10) << "a copy of " << tree_bytes << " bytes";
  EXPECT_EQ(state("t"), before);
}

TEST_F(XfsPathReaderTest, ARerunWithAHashfileReadsOnlyWhatChanged) {
  copies("t");
  // Outside the filesystem measured: its own growth would count against the freed figure.
  const std::string hash = shell_quote(std::string("/tmp/btrdedupe-xfs-") +
                                       std::to_string(::getpid()) + ".db");
  const auto first = run_json("-dr --hashfile=" + hash + " " + shell_quote(path("t")));
  EXPECT_GT(uint64_t(first["totals"]["bytes_read"]), 0u);
  const auto again = run_json("-dr --hashfile=" + hash + " " + shell_quote(path("t")));
  EXPECT_EQ(again["totals"]["bytes_read"], 0);
  EXPECT_EQ(freed(again), 0u);
  // One file rewritten with new data, another copied in: only they are read.
  sh("cd " + shell_quote(path("t")) + " && head -c 200000 /dev/urandom > a/new && "
     "cp --reflink=never a/new b/new && sync");
  const uint64_t used = df_used();
  const auto third = run_json("-dr --hashfile=" + hash + " " + shell_quote(path("t")));
  EXPECT_EQ(third["filesystems"][0]["catalog"]["files_changed"], 2);
  const uint64_t read = third["totals"]["bytes_read"];
  EXPECT_GE(read, 2 * 200000u);
  EXPECT_LE(read, 2 * 200704u);  // whole blocks at most
  expect_df_agrees(freed(third), used - df_used());
  EXPECT_GE(freed(third), 200000u);
  sh("rm -f " + hash);
}

TEST_F(XfsPathReaderTest, TheTreeReaderIsRefusedWithAReason) {
  twins("x", 1 << 20);
  std::string out, err;
  EXPECT_EQ(btrdedupe_split("-d --reader=tree " + shell_quote(path("d")), &out, &err), 1);
  EXPECT_NE(err.find("is on xfs, which has no trees to search: use --reader=paths"),
            std::string::npos)
      << err;
  EXPECT_EQ(btrdedupe_split("-d --reader=sideways " + shell_quote(path("d")), &out, &err), 2);
  EXPECT_NE(err.find("--reader: 'sideways' (known: tree, paths)"), std::string::npos) << err;
  EXPECT_EQ(btrdedupe_split("-d --all-subvols " + shell_quote(path("d")), &out, &err), 1);
  EXPECT_NE(err.find("--all-subvols need the tree reader (root, on btrfs)"), std::string::npos)
      << err;
  // -B has no windows to take in a walk: said, and the run reads whole.
  EXPECT_EQ(btrdedupe_split("-d -B 1 " + shell_quote(path("d")), &out, &err), 0) << err;
  EXPECT_NE(err.find("-B: a walk of the paths has no windows"), std::string::npos) << err;
  EXPECT_NE(out.find("Deduped 1048576 in 1 calls"), std::string::npos) << out;
}

TEST_F(XfsPathReaderTest, AFilesystemWithoutDedupeIsNamed) {
  const std::string dir = sh("mktemp -d /dev/shm/btrdedupe-XXXXXX");
  const std::string d = dir.substr(0, dir.find('\n'));
  std::string out, err;
  EXPECT_EQ(btrdedupe_split("-dr " + shell_quote(d), &out, &err), 1);
  EXPECT_NE(err.find(d + " is on tmpfs: btrdedupe dedupes on btrfs and XFS"), std::string::npos)
      << err;
  sh("rmdir " + shell_quote(d));
}

// btrfs as an ordinary user: the user owns the trees, root owns a few files beside them.
class UserPathReaderTest : public PathReaderRuns {
 protected:
  void SetUp() override {
    PathReaderRuns::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    sh(std::string("id -u ") + kUser + " >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin " +
       kUser);
    // The mount point's parents, mkdtemp's 0700 among them, must let the user through.
    for (std::string p = path(""); p.size() > 1; p = p.substr(0, p.rfind('/')))
      sh("chmod o+x " + shell_quote(p));
  }
  void own(const std::string& dir) { sh(std::string("chown -R ") + kUser + " " + shell_quote(path(dir))); }
};

TEST_F(UserPathReaderTest, FreesWhatARootRunFreesAndWhatBtrfsFiDfShows) {
  copies("user");
  own("user");
  copies("root");
  const auto user_before = state("user"), root_before = state("root");
  uint64_t used = data_used();
  const auto as_user = run_json("-dr " + shell_quote(path("user")), 0, kUser);
  EXPECT_EQ(as_user["reader"], "paths");
  EXPECT_TRUE(noted(as_user, "reading by paths (tree search needs root)")) << as_user["notes"];
  const uint64_t user_gone = used - data_used();
  EXPECT_EQ(freed(as_user), user_gone);
  used = data_used();
  const auto as_root = run_json("-dr " + shell_quote(path("root")));
  EXPECT_EQ(as_root["reader"], "tree");
  EXPECT_EQ(freed(as_root), used - data_used());
  EXPECT_EQ(freed(as_user), freed(as_root));
  EXPECT_GT(freed(as_user), 0u);
  EXPECT_EQ(state("user"), user_before);
  EXPECT_EQ(state("root"), root_before);
}

TEST_F(UserPathReaderTest, RootsFilesAreSourcesOnlyAndUnreadableOnesAreCountedOnce) {
  twins("x", 3 << 20);
  sh("cd " + shell_quote(path("d")) + " && cp --reflink=never x theirs && cp --reflink=never x "
     "secret && chmod 600 secret && mkdir closed && cp --reflink=never x closed/y && "
     "chmod 700 closed && sync");
  sh(std::string("chown ") + kUser + " " + shell_quote(path("d")) + " " + shell_quote(path("d/x")) +
     " " + shell_quote(path("d/x.copy")));
  // Where theirs's data lies (filefrag's physical columns; its flags gain "shared").
  const auto where = [&] {
    return sh("filefrag -e " + shell_quote(path("d/theirs")) +
              " | awk '$1 ~ /^[0-9]+:$/ {print $4, $5}'");
  };
  const auto theirs_map = where();
  ASSERT_FALSE(theirs_map.empty());
  const auto before = state("d");
  const auto j = run_json("-d " + shell_quote(path("d")), 0, kUser);
  const auto& passed = j["filesystems"][0]["scan"]["passed_over"];
  EXPECT_EQ(passed["unreadable"], 2) << "secret and closed/";
  EXPECT_EQ(passed["not_ours_files"], 1) << "theirs";
  EXPECT_EQ(j["totals"]["ranges_refused"], 0) << "never asked to dedupe into theirs";
  // The user's two files now share theirs's extent; theirs kept its own.
  EXPECT_EQ(where(), theirs_map);
  EXPECT_TRUE(shared("d/x"));
  EXPECT_TRUE(shared("d/x.copy"));
  EXPECT_EQ(state("d"), before);
}

TEST_F(UserPathReaderTest, RootMayWalkThePathsOnBtrfsAndFreesWhatTheTreeReaderFrees) {
  copies("walked");
  copies("searched");
  uint64_t used = data_used();
  const auto walked = run_json("-dr --reader=paths " + shell_quote(path("walked")));
  EXPECT_EQ(walked["reader"], "paths");
  EXPECT_EQ(freed(walked), used - data_used());
  used = data_used();
  const auto searched = run_json("-dr " + shell_quote(path("searched")));
  EXPECT_EQ(freed(searched), used - data_used());
  EXPECT_EQ(freed(walked), freed(searched));
}

}  // namespace
}  // namespace btrdedupe::test
