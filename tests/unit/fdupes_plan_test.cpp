// --fdupes input planned without btrfs: real files in a temporary directory, whose
// filesystems a made-up identity names (a directory a "mount" of filesystem a or b), so the
// roots, the wanted files and what is refused follow from where each file lies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "src/scope/fdupes_input.h"

namespace btrdedupe {
namespace {

using ::testing::HasSubstr;

class FdupesPlanTest : public ::testing::Test {
 protected:
  FdupesPlanTest() {
    const char* tmp = std::getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/fdupes-plan-XXXXXX";
    if (!::mkdtemp(dir.data())) ADD_FAILURE() << "mkdtemp " << dir;
    dir = std::filesystem::canonical(dir).string();
    mounts[dir + "/fsA"] = "fs-a";
    mounts[dir + "/fsA2"] = "fs-a";  // a second mount of filesystem a
    mounts[dir + "/fsB"] = "fs-b";
  }
  ~FdupesPlanTest() override { std::filesystem::remove_all(dir); }

  // A file at `relative` (its directories made), its absolute path.
  std::string file(const std::string& relative) {
    const std::string path = dir + "/" + relative;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << relative;
    return path;
  }
  // The made-up identity: the filesystem of the deepest "mount" holding the path.
  FilesystemIdentity identity() {
    return [this](const std::string& path, bool want_file, std::string* why) -> std::string {
      asked.push_back(path);
      std::string fsid;
      size_t longest = 0;
      for (const auto& [point, id] : mounts)
        if ((path == point || point == "/" || path.rfind(point + "/", 0) == 0) &&
            point.size() >= longest)
          fsid = id, longest = point.size();
      if (fsid.empty()) {
        *why = path + " is on tmpfs, not btrfs";
      } else if (want_file && !std::filesystem::is_regular_file(path)) {
        *why = path + ": not a regular file";
        fsid.clear();
      }
      return fsid;
    };
  }
  FdupesScan plan(const std::vector<std::vector<std::string>>& groups) {
    return plan_fdupes_scan(groups, identity());
  }

  std::string dir;
  std::map<std::string, std::string> mounts;  // directory -> fsid
  std::vector<std::string> asked;
};

TEST_F(FdupesPlanTest, FilesOfOneFilesystemMakeOneRoot) {
  const auto s = plan({{file("fsA/x/1"), file("fsA/x/2")}, {file("fsA/y/3"), file("fsA/4")}});
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(s.groups, 2u);
  EXPECT_EQ(s.files, 4u);
  ASSERT_EQ(s.roots, (std::vector<std::string>{dir + "/fsA"}));
  EXPECT_EQ(s.wanted.at(dir + "/fsA"), (std::set<std::string>{"x/1", "x/2", "y/3", "4"}));
  EXPECT_FALSE(s.excluded(dir + "/fsA", "y"));
  EXPECT_TRUE(s.excluded(dir + "/fsA", "z"));
}

TEST_F(FdupesPlanTest, EachFilesystemHasItsRoot) {
  const auto s = plan({{file("fsA/d/one"), file("fsB/e/one"), file("fsB/e/f/two")}});
  EXPECT_EQ(s.groups, 1u);
  EXPECT_EQ(s.files, 3u);
  EXPECT_EQ(s.roots, (std::vector<std::string>{dir + "/fsA/d", dir + "/fsB/e"}));
  EXPECT_EQ(s.wanted.at(dir + "/fsA/d"), (std::set<std::string>{"one"}));
  EXPECT_EQ(s.wanted.at(dir + "/fsB/e"), (std::set<std::string>{"one", "f/two"}));
}

// Two mounts of one filesystem whose common directory is on another: a root per directory.
TEST_F(FdupesPlanTest, ACommonDirectoryOffTheFilesystemGivesARootPerDirectory) {
  const auto s = plan({{file("fsA/x/1"), file("fsA2/y/2"), file("fsA2/y/3")}});
  EXPECT_EQ(s.roots, (std::vector<std::string>{dir + "/fsA/x", dir + "/fsA2/y"}));
  EXPECT_EQ(s.wanted.at(dir + "/fsA/x"), (std::set<std::string>{"1"}));
  EXPECT_EQ(s.wanted.at(dir + "/fsA2/y"), (std::set<std::string>{"2", "3"}));
  EXPECT_NE(std::find(asked.begin(), asked.end(), dir), asked.end());  // the common one
}

TEST_F(FdupesPlanTest, UnusableFilesAreSaidAndGroupsOfOneDropped) {
  const std::string missing = dir + "/fsA/missing";
  std::filesystem::create_directories(dir + "/fsB/a-directory");
  const auto s = plan({{file("fsA/1"), missing},
                       {file("elsewhere/2"), file("fsB/3")},
                       {dir + "/fsB/a-directory", file("fsB/4")},
                       {file("fsA/5")}});
  EXPECT_EQ(s.groups, 0u);
  EXPECT_EQ(s.files, 0u);
  EXPECT_TRUE(s.roots.empty());
  ASSERT_EQ(s.errors.size(), 3u);
  EXPECT_EQ(s.errors[0], "fdupes input: " + missing + ": No such file or directory");
  EXPECT_EQ(s.errors[1], "fdupes input: " + dir + "/elsewhere/2 is on tmpfs, not btrfs");
  EXPECT_EQ(s.errors[2], "fdupes input: " + dir + "/fsB/a-directory: not a regular file");
}

// Paths are taken as they resolve: a file listed twice counts once.
TEST_F(FdupesPlanTest, SymlinksResolveToTheFileTheyName) {
  const std::string target = file("fsA/real");
  std::filesystem::create_directories(dir + "/fsB");
  std::filesystem::create_symlink(target, dir + "/fsB/link");
  const auto s = plan({{dir + "/fsB/link", target, file("fsA/other")}});
  EXPECT_EQ(s.groups, 1u);
  EXPECT_EQ(s.files, 2u);
  EXPECT_EQ(s.roots, (std::vector<std::string>{dir + "/fsA"}));
  EXPECT_EQ(s.wanted.at(dir + "/fsA"), (std::set<std::string>{"real", "other"}));
}

// Files whose only common directory is "/": paths relative to it.
TEST_F(FdupesPlanTest, TheRootDirectoryAsTheCommonOne) {
  mounts["/"] = "fs-a";
  char status[PATH_MAX];
  ASSERT_NE(::realpath("/proc/self/status", status), nullptr);
  const std::string mine = file("fsA/1");
  const auto s = plan({{"/proc/self/status", mine}});
  ASSERT_EQ(s.roots, (std::vector<std::string>{"/"}));
  const std::set<std::string> relative{std::string(status).substr(1), mine.substr(1)};
  EXPECT_EQ(s.wanted.at("/"), relative);
}

// The machine's identity off btrfs: nothing usable, each saying why.
TEST(MachineFsidOf, OffBtrfsEachPathSaysWhy) {
  std::string why;
  EXPECT_EQ(machine_fsid_of("/proc/no-such-file", true, &why), "");
  EXPECT_THAT(why, HasSubstr("No such file"));
  EXPECT_EQ(machine_fsid_of("/proc/self", false, &why), "");  // a symlink: not followed
  EXPECT_THAT(why, HasSubstr("open /proc/self: "));
  EXPECT_EQ(machine_fsid_of("/proc", true, &why), "");
  EXPECT_EQ(why, "/proc: not a regular file");
  EXPECT_EQ(machine_fsid_of("/proc/cpuinfo", true, &why), "");
  EXPECT_THAT(why, HasSubstr("/proc/cpuinfo is on "));
  EXPECT_THAT(why, HasSubstr(", not btrfs"));

  const auto s = plan_fdupes_scan({{"/proc/cpuinfo", "/proc/version"}});
  EXPECT_EQ(s.groups, 0u);
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_THAT(s.errors[0], HasSubstr("fdupes input: /proc/cpuinfo is on "));
}

}  // namespace
}  // namespace btrdedupe
