#include "btrfs/result.h"

#include <gtest/gtest.h>

TEST(Result, CarriesValueOrError) {
  btrfs::Result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  btrfs::Result<int> bad = btrfs::Error{ENOENT, "open /x"};
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ENOENT);
  EXPECT_EQ(bad.error().message(), "open /x: No such file or directory");
}
