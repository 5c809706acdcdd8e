// main() of the integration tests: a private mount namespace first, so that no mount or
// loop device outlives this process however it ends.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/btrfs_image.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string why;
  if (!btrdedupe::test::enter_private_mount_namespace(&why)) {
    // BtrfsTest::SetUp reports (fail or skip) when mounting then fails.
    std::fprintf(stderr, "warning: %s\n", why.c_str());
  }
  btrdedupe::test::remove_stale_work_dirs();
  if (std::getenv("BTRDEDUPE_HARNESS_CRASH_CHILD")) {
    // Used by the harness's own test: mount an image, then die without any cleanup.
    auto image = btrdedupe::test::BtrfsImage::create({}, &why);
    if (!image) return 1;
    std::printf("mounted %s\n", image->image_file().c_str());
    std::fflush(stdout);
    ::kill(::getpid(), SIGKILL);
  }
  return RUN_ALL_TESTS();
}
