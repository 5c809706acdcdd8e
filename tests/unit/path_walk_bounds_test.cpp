// Where the walk of the paths stops: other filesystems and nested subvolumes mounted below
// a root (/dev's own mounts stand for them, as no mount can be made without root: the
// scripted kernel says which is a nested subvolume of the same btrfs and which another
// filesystem), and, as an ordinary user, files it may not read or write.
#include "src/read/path_walk.h"

#include <gtest/gtest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "src/read/scanned_file.h"
#include "tests/unit/scripted_walk_kernel.h"

namespace btrdedupe {
namespace {

using test::mapped;
using test::ScriptedWalkKernel;

dev_t device_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

// Directories just below `dir` on another device than it: mount points, sorted.
std::vector<std::string> mounts_below(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code error;
  for (const auto& e : std::filesystem::directory_iterator(dir, error))
    if (e.is_directory(error) && !e.is_symlink(error) &&
        device_of(e.path().string()) != device_of(dir))
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool below(const std::string& relative, const std::string& dir) {
  return relative.rfind(dir + "/", 0) == 0;
}

std::set<uint64_t> subvolume_ids(const ScanResult& r) {
  std::set<uint64_t> ids;
  for (const auto& s : r.subvolumes) ids.insert(s.id);
  return ids;
}

// /dev as a btrfs subvolume (256); a mount below it that anyone may write (/dev/shm) a
// nested read-only subvolume (260) of the same btrfs, with a file the test puts there; every
// other mount another filesystem.
class WalkAcrossMounts : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& m : mounts_below(kDev)) {
      std::string path = kDev + "/" + m + "/btrdedupe-walk-XXXXXX";
      const int fd = nested_.empty() ? ::mkstemp(path.data()) : -1;
      if (fd < 0) {
        others_.push_back(m);
        continue;
      }
      ::close(fd);
      nested_ = m;
      probe_ = path;
    }
    if (nested_.empty()) GTEST_SKIP() << "no writable filesystem is mounted below " << kDev;
    kernel_.any_extents = std::vector<btrfs::FiemapExtent>{};
    kernel_.subvolume_of_device[device_of(kDev)] = {256, false};
    kernel_.subvolume_of_device[nested()] = {260, true};
    for (const auto& m : others_) kernel_.kind_of_device[device_of(kDev + "/" + m)] = btrfs::FsKind::Xfs;
  }
  void TearDown() override {
    if (!probe_.empty()) ::unlink(probe_.c_str());
  }
  dev_t nested() const { return device_of(kDev + "/" + nested_); }
  btrfs::Result<ScanResult> walk(const ScanOptions& o) { return walk_root(kDev, o, kernel_); }
  bool asked_on(dev_t dev) const {
    const auto& asked = kernel_.subvolume_asked_on;
    return std::find(asked.begin(), asked.end(), dev) != asked.end();
  }
  // No file below another filesystem; files below the nested subvolume, the test's among
  // them, only when `nested_walked`, in subvolume 260; the others in 256.
  void expect_files(const ScanResult& r, bool nested_walked) {
    bool probe_seen = false;
    for (const auto& f : r.files) {
      const std::string rel = relative_path(r, f);
      for (const auto& m : others_) EXPECT_FALSE(below(rel, m)) << rel;
      if (below(rel, nested_)) {
        EXPECT_TRUE(nested_walked) << rel;
        EXPECT_EQ(f.subvolume, 260u) << rel;
        probe_seen = probe_seen || file_path(r, f) == probe_;
      } else {
        EXPECT_EQ(f.subvolume, 256u) << rel;
      }
    }
    EXPECT_EQ(probe_seen, nested_walked);
    for (const auto& m : others_) EXPECT_FALSE(asked_on(device_of(kDev + "/" + m))) << m;
  }

  const std::string kDev = "/dev";
  std::string nested_, probe_;
  std::vector<std::string> others_;
  ScriptedWalkKernel kernel_;
};

TEST_F(WalkAcrossMounts, RecursiveWalksEnterNestedSubvolumesNotOtherFilesystems) {
  auto r = walk({});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(subvolume_ids(*r), (std::set<uint64_t>{256, 260}));
  for (const auto& s : r->subvolumes) EXPECT_EQ(s.readonly, s.id == 260) << s.id;
  EXPECT_EQ(r->excluded, 0u);
  expect_files(*r, true);
}

// The mount the test writes to, said to be another filesystem: not entered.
TEST_F(WalkAcrossMounts, AnotherFilesystemIsNotEntered) {
  kernel_.kind_of_device[nested()] = btrfs::FsKind::Xfs;
  auto r = walk({});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(subvolume_ids(*r), std::set<uint64_t>{256});
  EXPECT_FALSE(asked_on(nested()));
  expect_files(*r, false);
}

// The same kind with another identity is another filesystem too.
TEST_F(WalkAcrossMounts, AnotherFsidIsAnotherFilesystem) {
  kernel_.info_of_device[nested()] = test::walked_info(2);
  auto r = walk({});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(subvolume_ids(*r), std::set<uint64_t>{256});
  EXPECT_FALSE(asked_on(nested()));
  expect_files(*r, false);
}

TEST_F(WalkAcrossMounts, WithoutRecursionNoNestedSubvolumeIsEntered) {
  ScanOptions o;
  o.recursive = false;
  auto r = walk(o);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(subvolume_ids(*r), std::set<uint64_t>{256});
  EXPECT_FALSE(asked_on(nested()));
  expect_files(*r, false);
}

// --exclude-subvol, or --exclude naming its path: known, counted, not entered.
TEST_F(WalkAcrossMounts, AnExcludedNestedSubvolumeIsCountedNotEntered) {
  ScanOptions by_id;
  by_id.excluded_subvolumes = {260};
  ScanOptions by_path;
  by_path.exclude = [&](const std::string&, const std::string& rel) { return rel == nested_; };
  for (const ScanOptions& o : {by_id, by_path}) {
    auto r = walk(o);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->excluded, 1u);
    EXPECT_EQ(subvolume_ids(*r), (std::set<uint64_t>{256, 260}));
    expect_files(*r, false);
  }
}

// What a walk of `dir` as nobody (uid 65534) finds, as a child process writes it: its
// unreadable and not-ours counts, then each file as "path=not_ours".
std::string walk_as_nobody(const std::string& dir, const WalkKernel& kernel) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {  // no gtest here: the parent checks what the child writes
    ::close(pipe_fds[0]);
    std::ostringstream said;
    if (::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0) {
      auto r = walk_root(dir, {}, kernel);
      if (r) {
        said << r->passed_over.unreadable << ' ' << r->passed_over.not_ours_files;
        for (const auto& f : r->files) said << ' ' << relative_path(*r, f) << '=' << f.not_ours;
      } else {
        said << r.error().message();
      }
    }
    const std::string text = said.str();
    const bool written = ::write(pipe_fds[1], text.data(), text.size()) ==
                         static_cast<ssize_t>(text.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buf[256];
  for (ssize_t n; child > 0 && (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    return "the walk as nobody did not finish";
  return text;
}

// As nobody, in root's directory: a file it may read but not write is a source only, one
// it may write is a destination too, and what it may not read is counted and passed over.
TEST(WalkAsAnOrdinaryUser, FilesOfOthersAreSourcesOnlyAndUnreadableOnesCounted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to walk as another user (nobody)";
  char tmpl[] = "/tmp/btrdedupe-walk-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const auto make = [&](const std::string& name, mode_t mode) {
    std::ofstream(dir + "/" + name) << std::string(8192, 'x');
    ::chmod((dir + "/" + name).c_str(), mode);
  };
  ::chmod(dir.c_str(), 0755);
  make("theirs", 0644);
  make("open", 0666);
  make("secret", 0600);
  std::filesystem::create_directory(dir + "/closed");
  make("closed/inner", 0644);
  ::chmod((dir + "/closed").c_str(), 0700);
  ScriptedWalkKernel kernel;
  kernel.any_extents = std::vector<btrfs::FiemapExtent>{mapped(0, 1 << 20, 8192)};

  const std::string text = walk_as_nobody(dir, kernel);
  std::filesystem::remove_all(dir);
  std::istringstream in(text);
  uint64_t unreadable = 0, not_ours = 0;
  ASSERT_TRUE(in >> unreadable >> not_ours) << text;
  std::set<std::string> files{std::istream_iterator<std::string>(in), {}};
  EXPECT_EQ(unreadable, 2u);  // secret, closed
  EXPECT_EQ(not_ours, 1u);
  EXPECT_EQ(files, (std::set<std::string>{"open=0", "theirs=1"}));
}

}  // namespace
}  // namespace btrdedupe
