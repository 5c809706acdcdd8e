#include "src/report/byte_size.h"

#include <gtest/gtest.h>

namespace btrdedupe {

TEST(ByteSize, ParsesSuffixes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("128K"), 128u * 1024);
  EXPECT_EQ(parse_byte_size("128k"), 128u * 1024);
  EXPECT_EQ(parse_byte_size("4M"), 4u << 20);
  EXPECT_EQ(parse_byte_size("1GiB"), 1u << 30);
  EXPECT_EQ(parse_byte_size("2T"), 2ULL << 40);
}

TEST(ByteSize, RejectsGarbageAndOverflow) {
  EXPECT_EQ(parse_byte_size(""), std::nullopt);
  EXPECT_EQ(parse_byte_size("K"), std::nullopt);
  EXPECT_EQ(parse_byte_size("-4K"), std::nullopt);
  EXPECT_EQ(parse_byte_size("4X"), std::nullopt);
  EXPECT_EQ(parse_byte_size("99999999999999999999"), std::nullopt);
  EXPECT_EQ(parse_byte_size("17179869184G"), std::nullopt);
}

TEST(ByteSize, FormatsForPeople) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(3ULL << 30), "3.0 GiB");
}

}  // namespace btrdedupe
