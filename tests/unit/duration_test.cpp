#include "src/report/duration.h"

#include <gtest/gtest.h>

namespace btrdedupe {
namespace {

TEST(Duration, NumbersAndUnitsAsPeopleAndSystemdWriteThem) {
  EXPECT_EQ(parse_duration("90"), 90.0);
  EXPECT_EQ(parse_duration("5s"), 5.0);
  EXPECT_EQ(parse_duration("2.5s"), 2.5);
  EXPECT_EQ(parse_duration("30m"), 1800.0);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("1h 30min"), 5400.0);
  EXPECT_EQ(parse_duration("2h"), 7200.0);
  EXPECT_EQ(parse_duration("1d"), 86400.0);
  EXPECT_EQ(parse_duration("500ms"), 0.5);
}

TEST(Duration, AnythingElseIsNotADuration) {
  for (const char* bad : {"", " ", "soon", "5x", "-3", "s", "1h-2m", "nan", "inf", "5 s x"})
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
}

}  // namespace
}  // namespace btrdedupe
