// Opening a scanned file by its path (src/read/scanned_file.h) over real files in a
// temporary directory: proof it is the file scanned, and paths longer than open(2) takes.
#include "src/read/scanned_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "btrfs/fd.h"
#include "unit/real_files.h"

namespace btrdedupe {
namespace {

using test::RealFiles;
using test::sector_bytes;

// Makes `levels` nested directories of 200-byte names below `dir` (one at a time, by
// openat: the whole path is past PATH_MAX), returns their relative path.
std::string deep_directories(const std::string& dir, int levels) {
  const std::string name(200, 'd');
  auto at = btrfs::Fd::open(dir, O_RDONLY | O_DIRECTORY);
  std::string rel;
  for (int i = 0; i < levels && at; ++i) {
    EXPECT_EQ(::mkdirat(at->get(), name.c_str(), 0755), 0);
    at = btrfs::Fd::open_at(at->get(), name, O_RDONLY | O_DIRECTORY);
    rel += (rel.empty() ? "" : "/") + name;
  }
  EXPECT_TRUE(at) << at.error().message();
  return rel;
}

// Writes `bytes` as `name` inside the directory at `rel` below `dir`; its inode.
uint64_t write_deep_file(const std::string& dir, const std::string& rel, const std::string& name,
                         const std::vector<uint8_t>& bytes) {
  auto at = btrfs::Fd::open(dir, O_RDONLY | O_DIRECTORY);
  for (size_t from = 0; at && from < rel.size();) {
    const size_t slash = std::min(rel.find('/', from), rel.size());
    at = btrfs::Fd::open_at(at->get(), rel.substr(from, slash - from), O_RDONLY | O_DIRECTORY);
    from = slash + 1;
  }
  if (!at) {
    ADD_FAILURE() << at.error().message();
    return 0;
  }
  const int f = ::openat(at->get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(f, 0);
  const btrfs::Fd fd(f);
  EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  struct stat st {};
  EXPECT_EQ(::fstat(fd.get(), &st), 0);
  return st.st_ino;
}

class ScannedFileTest : public ::testing::Test {
 protected:
  // A file at `rel`/`name`, deeper than PATH_MAX, scanned with `inode`.
  uint32_t add_deep(const std::string& rel, const std::string& name, uint64_t inode,
                    uint64_t size) {
    ScannedFile f;
    f.inode = inode;
    f.size = size;
    f.path_node = files_.scan.paths.add(PathTable::kRoot, rel + "/" + name);
    files_.scan.files.push_back(f);
    return static_cast<uint32_t>(files_.scan.files.size() - 1);
  }

  RealFiles files_;
};

TEST_F(ScannedFileTest, APathPastPathMaxIsOpenedOneDirectoryAtATime) {
  const std::string rel = deep_directories(files_.dir, 25);
  const auto bytes = sector_bytes(9, 1, 10);
  const uint64_t ino = write_deep_file(files_.dir, rel, "deep", bytes);
  const uint32_t f = add_deep(rel, "deep", ino, bytes.size());
  ASSERT_GE(file_path(files_.scan, files_.scan.files[f]).size(), size_t{PATH_MAX});

  auto fd = open_scanned_file(files_.scan, files_.scan.files[f], false);
  ASSERT_TRUE(fd) << fd.error().message();
  std::vector<uint8_t> read_back(bytes.size() + 1);
  EXPECT_EQ(::pread(fd->get(), read_back.data(), read_back.size(), 0),
            static_cast<ssize_t>(bytes.size()));
  read_back.resize(bytes.size());
  EXPECT_EQ(read_back, bytes);

  // An empty component ("a//b") is skipped as the kernel skips it.
  files_.scan.roots[0].path = files_.dir + "/";
  ASSERT_NE(file_path(files_.scan, files_.scan.files[f]).find("//"), std::string::npos);
  EXPECT_TRUE(open_scanned_file(files_.scan, files_.scan.files[f], false));
}

TEST_F(ScannedFileTest, ADeepPathThatIsGoneOrReplacedFails) {
  const std::string rel = deep_directories(files_.dir, 25);
  const uint64_t ino = write_deep_file(files_.dir, rel, "deep", sector_bytes(1, 1));
  const uint32_t missing = add_deep(rel, "missing", ino, 4096);
  auto fd = open_scanned_file(files_.scan, files_.scan.files[missing], false);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ENOENT);

  // A directory on the way that is not one (here a file) is not gone through.
  const uint32_t through_file = add_deep(rel + "/deep", "below", ino, 4096);
  fd = open_scanned_file(files_.scan, files_.scan.files[through_file], false);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ENOTDIR);

  const uint32_t other = add_deep(rel, "deep", ino + 1, 4096);
  fd = open_scanned_file(files_.scan, files_.scan.files[other], false);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ESTALE);
  EXPECT_NE(fd.error().message().find("replaced by another file"), std::string::npos);
}

TEST_F(ScannedFileTest, ANameNowHoldingAnotherFileIsStale) {
  const uint32_t f = files_.add_file("a", sector_bytes(1, 1));
  files_.write("b", sector_bytes(1, 1));  // another inode while a's is still in use
  std::filesystem::rename(files_.path("b"), files_.path("a"));
  auto fd = open_scanned_file(files_.scan, files_.scan.files[f], false);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ESTALE);
  EXPECT_EQ(fd.error().message().rfind(files_.path("a") + ": replaced by another file", 0), 0u)
      << fd.error().message();
}

TEST_F(ScannedFileTest, ADirectoryInPlaceOfTheFileIsStale) {
  const uint32_t f = files_.add_file("a", sector_bytes(1, 1));
  std::filesystem::remove(files_.path("a"));
  std::filesystem::create_directory(files_.path("a"));
  auto fd = open_scanned_file(files_.scan, files_.scan.files[f], false);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ESTALE);
}

}  // namespace
}  // namespace btrdedupe
