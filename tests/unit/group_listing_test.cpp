// Group listings kept in memory, or spilled to an unnamed temporary file (windowed runs).
#include "src/report/group_listing.h"

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
  // Kept in memory first, as added; then the spilled ones, largest length first.
  const size_t order[] = {0, 3, 2, 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same((*all)[i], want[order[i]])) << i;
  EXPECT_EQ(l.size(), 4u);
}

GroupListing::Member member(std::string path, uint64_t offset, bool source) {
  return {std::move(path), offset, source ? 0u : 1u, source, !source};
}

GroupListing group(uint64_t length, bool whole, std::vector<GroupListing::Member> members) {
  return {length, whole, std::move(members)};
}

// As a run in windows lists them: each window plans its copies against the same earlier
// copy, the source, and lists one group per window.
TEST(GroupListings, TheWindowsListingsOfOneSourceRangeReadBackAsOneGroup) {
  GroupListings l;
  ASSERT_TRUE(l.spill_to_disk());
  ASSERT_TRUE(l.add(std::vector<GroupListing>{
      group(8192, true, {member("1/a", 0, true), member("1/b", 0, false)}),
      group(4096, false, {member("1/x", 4096, true), member("1/y", 0, false)}),
  }));
  ASSERT_TRUE(l.add(std::vector<GroupListing>{
      // another content of the same length, sorted before the run's other group
      group(8192, true, {member("0/z", 0, true), member("2/z", 0, false)}),
      group(8192, true, {member("1/a", 0, true), member("2/a", 0, false)}),
      // the same source file at another offset is another range
      group(4096, false, {member("1/x", 0, true), member("2/y", 0, false)}),
  }));
  ASSERT_TRUE(l.add(std::vector<GroupListing>{
      // 1/b listed again, now as a source: it keeps its first role
      group(8192, true, {member("1/a", 0, true), member("3/a", 0, false), member("1/b", 0, true)}),
      // the same path and offset as a whole file of another length: another group
      group(12288, true, {member("1/a", 0, true), member("3/c", 0, false)}),
      group(4096, false, {member("1/x", 4096, true), member("3/y", 0, false)}),
      // no source (nothing planned): keyed by its first member
      group(4096, false, {member("4/u", 0, false), member("4/v", 0, false)}),
  }));
  ASSERT_TRUE(l.add(std::vector<GroupListing>{
      group(4096, false, {member("4/u", 0, false), member("5/v", 0, false)}),
  }));
  auto all = l.read_all();
  ASSERT_TRUE(all) << all.error().message();
  const std::vector<GroupListing> want = {
      group(12288, true, {member("1/a", 0, true), member("3/c", 0, false)}),
      group(8192, true, {member("0/z", 0, true), member("2/z", 0, false)}),
      group(8192, true,
            {member("1/a", 0, true), member("1/b", 0, false), member("2/a", 0, false),
             member("3/a", 0, false)}),
      group(4096, false, {member("1/x", 0, true), member("2/y", 0, false)}),
      group(4096, false,
            {member("1/x", 4096, true), member("1/y", 0, false), member("3/y", 0, false)}),
      group(4096, false, {member("4/u", 0, false), member("4/v", 0, false), member("5/v", 0, false)}),
  };
  ASSERT_EQ(all->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same((*all)[i], want[i])) << i;
  EXPECT_EQ(l.size(), 10u);  // as added
}

// Thousands of windows: each run's reading buffer shrinks to 4 KiB, and a listing longer
// than its buffer is read across refills.
TEST(GroupListings, ManyRunsMergeWithSmallBuffers) {
  GroupListings l;
  ASSERT_TRUE(l.spill_to_disk());
  const std::string long_name(10000, 'n');
  constexpr size_t kRuns = 3000;
  for (size_t r = 0; r < kRuns; ++r)
    ASSERT_TRUE(l.add(std::vector<GroupListing>{
        group(4096, true, {member("src/" + long_name, 0, true),
                           member("copy" + std::to_string(r), 0, false)}),
        group(8192, true, {member("own" + std::to_string(r), 0, true),
                           member("own" + std::to_string(r) + "b", 0, false)}),
    }));
  std::vector<GroupListing> seen;
  ASSERT_TRUE(l.for_each([&](const GroupListing& g) { seen.push_back(g); }));
  ASSERT_EQ(seen.size(), kRuns + 1);
  for (size_t i = 0; i < kRuns; ++i) {
    EXPECT_EQ(seen[i].length, 8192u);
    EXPECT_EQ(seen[i].members.size(), 2u);
  }
  const auto& shared = seen.back();
  ASSERT_EQ(shared.members.size(), kRuns + 1);
  EXPECT_EQ(shared.members[0].path, "src/" + long_name);
  EXPECT_TRUE(shared.members[0].source);
  for (size_t r = 0; r < kRuns; ++r) {
    EXPECT_EQ(shared.members[r + 1].path, "copy" + std::to_string(r));
    EXPECT_TRUE(shared.members[r + 1].destination);
  }
}

// A window's run is written in pieces of a bounded buffer: one run of several MiB, its
// groups and their members crossing the pieces' edges, reads back whole and in order.
TEST(GroupListings, ARunLargerThanItsWriteBufferReadsBackWhole) {
  GroupListings l;
  ASSERT_TRUE(l.spill_to_disk());
  constexpr size_t kGroups = 3000;
  std::vector<GroupListing> run;
  for (size_t i = 0; i < kGroups; ++i) {
    const std::string name(1000 + i % 7, static_cast<char>('a' + i % 26));
    run.push_back(group(4096 * (i + 1), true,
                        {member("src/" + std::to_string(i) + name, i, true),
                         member("dst/" + std::to_string(i), 0, false)}));
  }
  ASSERT_TRUE(l.add(run));
  std::vector<GroupListing> seen;
  ASSERT_TRUE(l.for_each([&](const GroupListing& g) { seen.push_back(g); }));
  ASSERT_EQ(seen.size(), kGroups);
  for (size_t k = 0; k < kGroups; ++k)  // largest length first
    EXPECT_TRUE(same(seen[k], run[kGroups - 1 - k])) << k;
}

}  // namespace
}  // namespace btrdedupe
