#include "src/follow/pressure.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

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

// The "some" total of a PSI file as read now, nullopt where the kernel has none.
std::optional<uint64_t> some_total_of(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return psi_some_total(text.str());
}

// The machine's PSI files: a reading lies between two of the test's own (the totals only
// grow), or there is none where the kernel has no PSI.
TEST(ProcPressure, ReadsTheMachinesIoAndCpuTotals) {
  const auto io_before = some_total_of("/proc/pressure/io");
  const auto cpu_before = some_total_of("/proc/pressure/cpu");
  const auto reading = proc_pressure().read();
  const auto io_after = some_total_of("/proc/pressure/io");
  const auto cpu_after = some_total_of("/proc/pressure/cpu");
  if (!io_before || !cpu_before || !io_after || !cpu_after) {
    EXPECT_FALSE(reading);
    GTEST_SKIP() << "no PSI on this kernel";
  }
  ASSERT_TRUE(reading);
  EXPECT_GE(reading->io_us, *io_before);
  EXPECT_LE(reading->io_us, *io_after);
  EXPECT_GE(reading->cpu_us, *cpu_before);
  EXPECT_LE(reading->cpu_us, *cpu_after);
}

}  // namespace
}  // namespace btrdedupe
