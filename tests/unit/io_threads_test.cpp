// Whether a block device is rotational (src/dedupe/io_threads.h), against the machine's own
// /sys/block/<name>/queue/rotational, reached by the device's name rather than its number.
#include "src/dedupe/io_threads.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "unit/real_files.h"

namespace btrdedupe {
namespace {

TEST(DeviceIsRotational, WhatIsNoBlockDeviceIsNot) {
  test::RealFiles files;
  files.add_file("plain", test::sector_bytes(1, 1));
  EXPECT_FALSE(device_is_rotational(files.path("plain")));
  EXPECT_FALSE(device_is_rotational(files.dir));
  EXPECT_FALSE(device_is_rotational(files.path("missing")));
  EXPECT_FALSE(device_is_rotational("/dev/null"));  // a character device
}

TEST(DeviceIsRotational, AgreesWithSysBlockForEachDiskOfTheMachine) {
  size_t compared = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/block", ec)) {
    const std::string name = entry.path().filename().string();
    const std::string dev = "/dev/" + name;
    struct stat st {};
    if (::stat(dev.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) continue;
    std::ifstream in(entry.path() / "queue" / "rotational");
    int rotational = 0;
    if (!(in >> rotational)) continue;
    EXPECT_EQ(device_is_rotational(dev), rotational != 0) << dev;
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "no disk of /sys/block has a node in /dev";
}

}  // namespace
}  // namespace btrdedupe
