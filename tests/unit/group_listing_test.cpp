// Group listings kept in memory, or spilled to an unnamed temporary file (windowed runs).
#include "src/group_listing.h"

#include <gtest/gtest.h>

namespace btrdedupe {
namespace {

GroupListing listing(uint64_t length, const std::vector<std::string>& paths) {
  GroupListing g;
  g.length = length;
  g.whole_file = length % 2 == 0;
  for (size_t i = 0; i < paths.size(); ++i)
    g.members.push_back({paths[i], i * 4096, static_cast<uint32_t>(i), i == 0, i > 0});
  return g;
}

bool same(const GroupListing& a, const GroupListing& b) {
  if (a.length != b.length || a.whole_file != b.whole_file || a.members.size() != b.members.size())
    return false;
  for (size_t i = 0; i < a.members.size(); ++i) {
    const auto &x = a.members[i], &y = b.members[i];
    if (x.path != y.path || x.offset != y.offset || x.layout != y.layout ||
        x.source != y.source || x.destination != y.destination)
      return false;
  }
  return true;
}

TEST(GroupListings, SpilledListingsReadBackInOrderAsOftenAsAsked) {
  const std::vector<GroupListing> want = {
      listing(10, {"a/kept in memory", "b"}),
      listing(11, {"spilled/one", std::string("not utf-8 \xff\xfe", 12), ""}),
      listing(12, {}),
      listing(13, {"added/after/a/read", "x"}),
  };
  GroupListings l;
  ASSERT_TRUE(l.add(want[0]));
  ASSERT_TRUE(l.spill_to_disk());
  ASSERT_TRUE(l.add(want[1]));
  ASSERT_TRUE(l.add(want[2]));
  auto first = l.read_all();
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_EQ(first->size(), 3u);
  ASSERT_TRUE(l.add(want[3]));  // appended after a read, not written over the start
  const GroupListings copy = l;  // a report copied into the job's result shares the file
  auto all = copy.read_all();
  ASSERT_TRUE(all) << all.error().message();
  ASSERT_EQ(all->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same((*all)[i], want[i])) << i;
  EXPECT_EQ(l.size(), 4u);
}

}  // namespace
}  // namespace btrdedupe
