// Every prefetch mode dedupes the same and changes no data (speed is for the benchmark).
#include <gtest/gtest.h>

#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

class PrefetchMode : public BtrfsTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(PrefetchMode, DedupesTwoCopiesWithoutChangingData) {
  build_layout("two-copies", "tc");
  const std::string state_cmd = "cd " + shell_quote(path("tc")) +
                                " && find . -type f -printf '%p %T@\\n' | sort"
                                " && find . -type f -print0 | sort -z | xargs -0 sha256sum";
  const auto before = sh(state_cmd);
  const auto r = run_command(std::string(BTRDEDUPE_BINARY) + " -dqr --prefetch=" + GetParam() +
                             " " + shell_quote(path("tc")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // fixtures/README.md: a perfect run makes 19,476,456 bytes shared (block-rounded).
  EXPECT_EQ(r.output, "Comparison of extent info shows a net change in shared extents of: 36405248\n");
  EXPECT_EQ(sh(state_cmd), before);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, PrefetchMode,
                         ::testing::Values("read", "readahead", "fadvise", "none"));

TEST(PrefetchOption, RejectsUnknownModes) {
  const auto r = run_command(std::string(BTRDEDUPE_BINARY) + " -dr --prefetch=psychic /");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "btrdedupe: --prefetch: 'psychic' is not one of read, readahead, fadvise, none\n");
}

}  // namespace
}  // namespace btrdedupe::test
