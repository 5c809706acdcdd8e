// btrdedupe --follow on real btrfs: data that arrives is deduped once it settles, its status
// is what it did, and it stops cleanly (SIGTERM) or leaves a hashfile the next start uses
// (SIGKILL). Each test checks that no file's content or mtime changed.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/btrfs/follow_fixture.h"

namespace btrdedupe::test {
namespace {

constexpr size_t kFile = 1 << 20;

TEST_F(FollowTest, ACopyThatArrivesIsDedupedAndSIGTERMStopsItCleanly) {
  random_tree("d", 8, kFile);
  auto follower = start({}, true);
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  EXPECT_EQ(status().bytes_freed, 0u);
  EXPECT_EQ(status().files_read, 8u);   // the first pass
  const uint64_t used_before = data_used();

  arrive("d", "d2");
  const auto before = state();
  const uint64_t arrived = data_used() - used_before;
  EXPECT_GE(arrived, 8 * kFile);
  ASSERT_TRUE(wait_until([&] { return status().bytes_freed >= 8 * kFile; }))
      << follower->output();
  ASSERT_TRUE(waiting_after(2)) << follower->output();
  EXPECT_TRUE(shared("d2/f1"));
  EXPECT_TRUE(shared("d2/f8"));
  // The figure it prints is what btrfs says.
  EXPECT_EQ(data_used(), used_before + arrived - status().bytes_freed);
  EXPECT_EQ(status().files_read, 16u);   // each copy read once, none again once deduped

  const auto running = follow_status();
  EXPECT_EQ(running.exit_code, 0) << running.output;
  EXPECT_TRUE(has(running.output, "running, pid " + std::to_string(follower->pid())))
      << running.output;
  EXPECT_TRUE(has(running.output, "waiting for a change")) << running.output;
  const auto json = follow_status("--json");
  EXPECT_EQ(json.exit_code, 0);
  const auto parsed = follow_status_from_json(json.output);
  ASSERT_TRUE(parsed) << json.output;
  EXPECT_EQ(parsed->bytes_freed, status().bytes_freed);

  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  EXPECT_TRUE(has(follower->output(), "cycle ")) << follower->output();
  const auto stopped = follow_status();
  EXPECT_EQ(stopped.exit_code, 3) << stopped.output;
  EXPECT_TRUE(has(stopped.output, "stopped (stopped on a signal)")) << stopped.output;
  // Each cycle is a run in the hashfile's history.
  const auto history = btrdedupe("--history --hashfile=" + shell_quote(hashfile()));
  EXPECT_EQ(history.exit_code, 0) << history.output;
  expect_unchanged(before);
}

TEST_F(FollowTest, AFileStillBeingWrittenWaitsUntilItSettles) {
  random_tree("d", 2, kFile);
  auto follower = start({"--settle=6"});
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  arrive("d", "d2");
  const auto before = state();
  // SIGHUP: a cycle now, while the copy is younger than --settle.
  follower->kill(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return status().files_settling >= 2; }, 10))
      << follower->output();
  EXPECT_FALSE(shared("d2/f1"));
  // The mtimes cp -a kept are old; what waits is the change (ctime) just made.
  ASSERT_TRUE(wait_until([&] { return status().bytes_freed >= 2 * kFile; }, 40))
      << follower->output();
  EXPECT_EQ(status().files_settling, 0u);
  EXPECT_TRUE(shared("d2/f1"));
  EXPECT_TRUE(shared("d2/f2"));
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  expect_unchanged(before);
}

TEST_F(FollowTest, AFollowerKilledWithSIGKILLLeavesAHashfileTheNextStartUses) {
  random_tree("d", 40, 256 << 10);
  arrive("d", "d1");
  // Killed in its first pass, then in cycles deduping a copy (at a few points of them),
  // each time started again on the same hashfile.
  // --max-read-rate makes each dedupe take seconds: the kills land inside them.
  auto kill_when = [&](const char* state, int after_ms, const std::string& copy) {
    auto follower = start({"--max-read-rate=2M"});
    if (!copy.empty()) {
      ASSERT_TRUE(waiting_after(1)) << follower->output();
      arrive("d", copy);
    }
    ASSERT_TRUE(wait_until([&] { return status().state == state &&
                                        status().pid == follower->pid(); }, 30))
        << follower->output();
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    follower->kill(SIGKILL);
    EXPECT_EQ(follower->wait(), -SIGKILL);
    killed_run();
  };
  kill_when("first pass", 200, "");
  for (int i = 0; i < 3; ++i) kill_when("cycle", 200 + 1500 * i, "d" + std::to_string(i + 2));
  const auto killed = follow_status();
  EXPECT_EQ(killed.exit_code, 3) << killed.output;
  EXPECT_TRUE(has(killed.output, "killed: pid")) << killed.output;
  const auto before = state();

  auto follower = start();
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  // The first pass of the new start reads only what the killed one had not recorded.
  EXPECT_LE(status().files_read, 40u) << follower->output();
  for (const char* copy : {"d1", "d2", "d3", "d4"})
    EXPECT_TRUE(wait_until([&] { return shared(std::string(copy) + "/f40") &&
                                        shared(std::string(copy) + "/f1"); }, 30)) << copy;
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
  expect_unchanged(before);
  std::string report;
  EXPECT_TRUE(fs().check_unmounted(&report)) << report;
}

TEST_F(FollowTest, NothingArrivingMeansNoCycles) {
  random_tree("d", 4, kFile);
  auto follower = start();
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  std::this_thread::sleep_for(std::chrono::seconds(6));
  EXPECT_EQ(status().cycles, 1u) << follower->output();
  EXPECT_EQ(status().last_change_seen, 0);
  follower->kill(SIGINT);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
}

TEST_F(FollowTest, ProgressJsonCarriesEachChangeOfStatus) {
  random_tree("d", 2, kFile);
  auto follower = start({"--progress=json"});
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  arrive("d", "d2");
  ASSERT_TRUE(wait_until([&] { return status().cycles_with_changes >= 2; })) << follower->output();
  ASSERT_TRUE(waiting_after(2)) << follower->output();
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0);
  // One line per change: the first pass, waits, the cycle, the stop; the cycles' own
  // progress events between them.
  std::vector<FollowStatus> events;
  std::istringstream lines(follower->output());
  for (std::string line; std::getline(lines, line);) {
    const std::string head = "{\"event\":\"follow\",\"status\":";
    if (line.rfind(head, 0) != 0) continue;
    auto s = follow_status_from_json(line.substr(head.size(), line.size() - head.size() - 1));
    ASSERT_TRUE(s) << line;
    events.push_back(*s);
  }
  ASSERT_GE(events.size(), 4u) << follower->output();
  EXPECT_EQ(events.front().state, "first pass");
  EXPECT_EQ(events.back().state, "stopped");
  EXPECT_EQ(events.back().bytes_freed, status().bytes_freed);
  EXPECT_GE(events.back().bytes_freed, 2 * kFile);
  EXPECT_TRUE(std::any_of(events.begin(), events.end(),
                          [](const FollowStatus& s) { return s.state == "cycle"; }));
  EXPECT_TRUE(has(follower->output(), "{\"event\":\"phase\",\"phase\":\"dedupe\""))
      << follower->output();
}

TEST_F(FollowTest, AHashfileOnTheFollowedFilesystemIsNeitherReadNorAReasonForCycles) {
  hashfile_in_fs_ = true;
  random_tree("d", 4, kFile);
  auto follower = start();
  ASSERT_TRUE(waiting_after(1)) << follower->output();
  EXPECT_EQ(status().files_read, 4u);
  arrive("d", "d2");
  ASSERT_TRUE(wait_until([&] { return shared("d2/f4"); })) << follower->output();
  ASSERT_TRUE(waiting_after(2)) << follower->output();
  // Recording a cycle and its status writes on the filesystem: no cycle for that. (A reader
  // of the status file makes one: the replaced file it held open is freed in a transaction
  // of its own once it closes; so the test reads it once, then leaves it alone for 10 s,
  // where a follower woken by its own writes ran a cycle every 2-4 s.)
  const auto settled = status();
  EXPECT_EQ(settled.files_read, 8u);
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const auto later = status();
  EXPECT_LE(later.cycles, settled.cycles + 1) << follower->output();
  EXPECT_EQ(later.files_read, 8u);
  EXPECT_EQ(later.state, "waiting");
  follower->kill(SIGTERM);
  EXPECT_EQ(follower->wait(), 0) << follower->output();
}

}  // namespace
}  // namespace btrdedupe::test
