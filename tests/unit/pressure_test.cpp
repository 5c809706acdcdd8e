#include "src/follow/pressure.h"

#include <gtest/gtest.h>

namespace btrdedupe {
namespace {

TEST(PsiSomeTotal, ReadsTheSomeLinesTotal) {
  EXPECT_EQ(psi_some_total("some avg10=1.50 avg60=0.20 avg300=0.05 total=123456789\n"
                           "full avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"),
            123456789u);
  // /proc/pressure/cpu had no "full" line before Linux 5.13.
  EXPECT_EQ(psi_some_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=7"), 7u);
}

TEST(PsiSomeTotal, AnythingElseIsNoReading) {
  EXPECT_FALSE(psi_some_total(""));
  EXPECT_FALSE(psi_some_total("full avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"));
  EXPECT_FALSE(psi_some_total("some avg10=0.00 avg60=0.00 avg300=0.00\n"));
  EXPECT_FALSE(psi_some_total("some avg10=0.00 total=x\n"));
  // The total belongs to the first line only.
  EXPECT_FALSE(psi_some_total("some avg10=0.00\nfull total=42\n"));
}

TEST(StallShare, IsTheLargerOfIoAndCpuOverTheInterval) {
  EXPECT_DOUBLE_EQ(stall_share({1'000'000, 0}, {1'500'000, 100'000}, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(stall_share({0, 0}, {100'000, 600'000}, 2.0), 0.3);
}

TEST(StallShare, StaysBetweenZeroAndOne) {
  EXPECT_DOUBLE_EQ(stall_share({0, 0}, {5'000'000, 0}, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(stall_share({9, 9}, {1, 1}, 1.0), 0.0);   // a counter that went back
  EXPECT_DOUBLE_EQ(stall_share({0, 0}, {100, 100}, 0.0), 0.0);
}

}  // namespace
}  // namespace btrdedupe
