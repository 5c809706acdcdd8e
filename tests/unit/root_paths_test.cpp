// Roots as duperemove takes them: symlinks followed, fifos and devices passed over.
#include "src/scope/root_paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace btrdedupe {
namespace {

class RootPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/btrdedupe-roots-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string p(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(RootPathsTest, SymlinksGivenAsRootsAreFollowed) {
  std::filesystem::create_directory(p("real"));
  std::ofstream(p("real/file")) << "x";
  std::filesystem::create_directory_symlink(p("real"), p("share"));
  std::filesystem::create_symlink(p("real/file"), p("one"));
  const auto r = resolve_roots({p("share"), p("one"), p("real"), p("share/")});
  const std::string real = std::filesystem::canonical(p("real"));
  EXPECT_EQ(r.paths, (std::vector<std::string>{real, real + "/file", p("real"), p("share/")}));
  EXPECT_TRUE(r.notes.empty());
}

TEST_F(RootPathsTest, RootsThatAreNeitherFilesNorDirectoriesArePassedOver) {
  ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/null", p("null"));
  std::filesystem::create_directory(p("d"));
  const auto r = resolve_roots({p("fifo"), p("d"), p("null")});
  EXPECT_EQ(r.paths, std::vector<std::string>{p("d")});
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_EQ(r.notes[0], p("fifo") + ": a fifo, neither a file nor a directory: passed over");
  EXPECT_EQ(r.notes[1], p("null") + " (a symlink to /dev/null): a character device, neither a "
                                    "file nor a directory: passed over");
}

// The scan reports these with its own message (and exit status 1), as for any root.
TEST_F(RootPathsTest, MissingPathsAndDanglingLinksAreKeptForTheScanToReport) {
  std::filesystem::create_symlink(p("gone"), p("dangling"));
  const auto r = resolve_roots({p("missing"), p("dangling")});
  EXPECT_EQ(r.paths, (std::vector<std::string>{p("missing"), p("dangling")}));
  EXPECT_TRUE(r.notes.empty());
}

// A --hashfile run of subfolders of the catalog's roots keeps the catalog's scope.
TEST(PathsWithin, SubfoldersAndTheRootsThemselvesAreWithinOthersAreNot) {
  EXPECT_TRUE(paths_within({"/mnt/b/sub"}, {"/mnt/a", "/mnt/b"}));
  EXPECT_TRUE(paths_within({"/mnt/b", "/mnt/a/x/y"}, {"/mnt/a", "/mnt/b"}));
  EXPECT_TRUE(paths_within({"/mnt/a"}, {"/mnt/a"}));
  EXPECT_TRUE(paths_within({"/mnt/a"}, {"/"}));
  EXPECT_FALSE(paths_within({"/mnt/bc"}, {"/mnt/b"}));    // a sibling sharing a prefix
  EXPECT_FALSE(paths_within({"/mnt"}, {"/mnt/a"}));       // above the root
  EXPECT_FALSE(paths_within({"/mnt/b/sub", "/mnt/c"}, {"/mnt/a", "/mnt/b"}));
  EXPECT_FALSE(paths_within({"/mnt/a"}, {}));
  EXPECT_TRUE(paths_within({}, {"/mnt/a"}));
}

}  // namespace
}  // namespace btrdedupe
