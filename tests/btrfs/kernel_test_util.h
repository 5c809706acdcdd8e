// Small helpers shared by the kernel-interface integration tests (fiemap, backrefs,
// open_inode, dedupe_range).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/fiemap.h"
#include "support/shell.h"

namespace btrdedupe::test {

// Opens or fails the test (non-fatally); an invalid Fd then makes the next call fail loudly.
inline btrfs::Fd open_or_fail(const std::string& path, int flags = O_RDONLY) {
  auto fd = btrfs::Fd::open(path, flags);
  EXPECT_TRUE(fd.ok()) << fd.error().message();
  return fd.ok() ? std::move(*fd) : btrfs::Fd();
}

inline struct stat stat_or_fail(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << "stat " << path;
  return st;
}

inline uint64_t inode_of(const std::string& path) { return stat_or_fail(path).st_ino; }

// The file's extent map through the code under test.
inline std::vector<btrfs::FiemapExtent> extents_of(const std::string& path) {
  auto fd = open_or_fail(path);
  auto map = btrfs::fiemap(fd.get());
  EXPECT_TRUE(map.ok()) << map.error().message();
  return map.ok() ? std::move(*map) : std::vector<btrfs::FiemapExtent>{};
}

// The file's content digest, computed by a tool independent of the code under test.
inline std::string sha256_of(const std::string& path) {
  const auto result = run_command("sha256sum " + shell_quote(path));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return result.output.substr(0, 64);
}

}  // namespace btrdedupe::test
