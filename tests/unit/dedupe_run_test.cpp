// The pool of one dedupe run (src/dedupe/dedupe_run.h) with a stand-in kernel, over real files
// in a temporary directory: the pace asked before each round, rounds whose source is gone,
// the rounds a full filesystem leaves untried, the ways ranges are warmed, progress, and the
// page cache the run leaves as it found it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "btrfs/fd.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/dedupe/dedupe_kernel.h"
#include "src/dedupe/range_prefetch.h"
#include "src/dedupe/round_pace.h"
#include "unit/real_files.h"

namespace btrdedupe {
namespace {

using test::RealFiles;
constexpr uint64_t kSector = RealFiles::kSectorBytes;

// Answers each call with `answer` (the call's index from 0, its length, destinations).
class AnsweringKernel final : public DedupeKernel {
 public:
  std::function<btrfs::DedupeOutcome(size_t call, uint64_t length)> answer =
      [](size_t, uint64_t length) {
        return btrfs::DedupeOutcome{btrfs::DedupeStatus::Same, 0, length};
      };
  std::function<void(size_t call)> on_call = [](size_t) {};

  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int, uint64_t, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) override {
    size_t call;
    {
      std::lock_guard lock(mu_);
      call = calls_++;
    }
    on_call(call);
    return btrfs::DedupeCall{length, length,
                             std::vector<btrfs::DedupeOutcome>(destinations.size(),
                                                               answer(call, length))};
  }
  size_t calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  size_t calls_ = 0;
};

// Records what each round will read; `waiting` runs as it waits before round n (from 1).
class RecordingPace final : public RoundPace {
 public:
  void before_round(uint64_t bytes) override {
    asked.push_back(bytes);
    waiting(asked.size());
  }
  std::vector<uint64_t> asked;
  std::function<void(size_t round)> waiting = [](size_t) {};
};

class DedupeRunTest : public ::testing::Test {
 protected:
  DedupeRunTest() {
    options_.kernel = &kernel_;
    options_.io_threads = 1;
    options_.eagain_wait_ms = 0;
    options_.round_started = &started_;
  }

  // `n` files of `sectors` sectors each, all alike.
  void add_files(int n, size_t sectors) {
    for (int i = 0; i < n; ++i)
      files_.add_file("f" + std::to_string(i), test::sector_bytes(9, sectors));
  }
  void add_round(RangeRef source, uint64_t length, std::vector<RangeRef> destinations) {
    DedupeRound r;
    r.source = source;
    r.length = length;
    r.destinations = std::move(destinations);
    plan_.planned_bytes += length * r.destinations.size();
    plan_.rounds.push_back(std::move(r));
  }
  DedupeStats run() { return run_dedupe(files_.scan, plan_, options_); }

  RealFiles files_;
  DedupePlan plan_;
  DedupeOptions options_;
  AnsweringKernel kernel_;
  std::vector<uint8_t> started_;
};

TEST_F(DedupeRunTest, ThePaceIsAskedBeforeEachRoundWithWhatItReads) {
  add_files(4, 4);
  add_round({0, 0}, 4 * kSector, {{1, 0}, {2, 0}});
  add_round({0, 0}, 2 * kSector, {{3, kSector}});
  RecordingPace pace;
  options_.pace = &pace;
  const DedupeStats stats = run();
  EXPECT_EQ(pace.asked, (std::vector<uint64_t>{3 * 4 * kSector, 2 * 2 * kSector}));
  EXPECT_EQ(stats.bytes_deduped, 2 * 4 * kSector + 2 * kSector);
}

// A stop that comes while the pace waits: the round is not started, and left for later.
TEST_F(DedupeRunTest, AStopDuringThePaceLeavesTheRestForLater) {
  add_files(3, 4);
  add_round({0, 0}, 4 * kSector, {{1, 0}});
  add_round({0, 0}, 4 * kSector, {{2, 0}});
  std::atomic<bool> stop{false};
  RecordingPace pace;
  pace.waiting = [&](size_t round) {
    if (round != 2) return;
    while (kernel_.calls() < 1) std::this_thread::yield();  // the first round has its call
    stop = true;
  };
  options_.pace = &pace;
  options_.stop = &stop;
  const DedupeStats stats = run();
  EXPECT_TRUE(stats.stopped);
  EXPECT_EQ(stats.rounds_not_started, 1u);
  EXPECT_EQ(stats.bytes_not_started, 4 * kSector);
  EXPECT_EQ(started_, (std::vector<uint8_t>{1, 0}));
}

TEST_F(DedupeRunTest, ARoundWhoseSourceIsGoneIsSkippedAsChanged) {
  add_files(4, 2);
  add_round({0, 0}, 2 * kSector, {{1, 0}, {2, 0}});
  add_round({3, 0}, 2 * kSector, {{1, 0}});
  std::filesystem::remove(files_.path("f0"));
  const DedupeStats stats = run();
  EXPECT_EQ(stats.ranges_changed, 2u);
  EXPECT_EQ(stats.ranges_same, 1u);
  EXPECT_EQ(kernel_.calls(), 1u);
  ASSERT_FALSE(stats.messages.empty());
  EXPECT_EQ(stats.messages[0].rfind("source ", 0), 0u) << stats.messages[0];
  EXPECT_NE(stats.messages[0].find(files_.path("f0")), std::string::npos) << stats.messages[0];
  EXPECT_NE(stats.messages[0].find("2 range(s) skipped"), std::string::npos)
      << stats.messages[0];
  EXPECT_EQ(started_, (std::vector<uint8_t>{1, 1}));  // looked at: not left for later
}

// After the first ENOSPC no round is started: every range but the first round's is
// counted as not tried, whether its round was queued, being prepared or never produced.
TEST_F(DedupeRunTest, AFullFilesystemLeavesEveryLaterRoundUntried) {
  add_files(9, 2);
  for (uint32_t r = 0; r < 8; ++r) add_round({0, 0}, 2 * kSector, {{r + 1, 0}});
  options_.prefetch_window = 0;  // one round queued at a time: most are never produced
  kernel_.answer = [](size_t, uint64_t) {
    return btrfs::DedupeOutcome{btrfs::DedupeStatus::Error, ENOSPC, 0};
  };
  const DedupeStats stats = run();
  EXPECT_TRUE(stats.no_space);
  EXPECT_EQ(kernel_.calls(), 1u);
  EXPECT_EQ(stats.ranges_failed, 1u);
  EXPECT_EQ(stats.ranges_not_tried, 7u);
}

TEST_F(DedupeRunTest, ReadPrefetchReadsEveryRangeOfARound) {
  add_files(3, 8);
  add_round({0, 0}, 8 * kSector, {{1, 0}, {2, 0}});
  add_round({0, 2 * kSector}, 4 * kSector, {{1, 4 * kSector}});
  options_.prefetch = Prefetch::Read;
  const DedupeStats stats = run();
  EXPECT_EQ(stats.bytes_prefetched, 3 * 8 * kSector + 2 * 4 * kSector);
  EXPECT_EQ(stats.ranges_same, 3u);
}

// Rounds of 1 MiB or more are read by their worker even when the others are fadvised.
TEST_F(DedupeRunTest, ALongRoundIsReadByItsWorkerAShortOneAskedAhead) {
  add_files(2, 300);
  add_round({0, 0}, 256 * kSector, {{1, 0}});          // 1 MiB: read
  add_round({0, 256 * kSector}, 16 * kSector, {{1, 256 * kSector}});  // fadvised
  options_.prefetch = Prefetch::Fadvise;
  const DedupeStats stats = run();
  EXPECT_EQ(stats.bytes_prefetched, 2 * 256 * kSector + 2 * 16 * kSector);
  EXPECT_EQ(stats.bytes_deduped, 256 * kSector + 16 * kSector);
}

TEST_F(DedupeRunTest, ProgressFollowsEachRound) {
  add_files(4, 4);
  add_round({0, 0}, 4 * kSector, {{1, 0}});
  add_round({0, 0}, 4 * kSector, {{2, 0}, {3, 0}});
  std::vector<uint64_t> seen;
  options_.on_progress = [&](uint64_t done) { seen.push_back(done); };
  const DedupeStats stats = run();
  EXPECT_EQ(seen, (std::vector<uint64_t>{4 * kSector, 12 * kSector}));
  EXPECT_EQ(stats.bytes_deduped, 12 * kSector);
}

// Ranges the run brought into the page cache go out after their rounds, however many
// rounds held them; ranges that were cached before stay.
TEST_F(DedupeRunTest, TheRunLeavesThePageCacheAsItFoundIt) {
  add_files(4, 16);
  std::vector<btrfs::Fd> fds;
  for (int i = 0; i < 4; ++i) {
    auto fd = btrfs::Fd::open(files_.path("f" + std::to_string(i)), O_RDONLY);
    ASSERT_TRUE(fd);
    ASSERT_EQ(::fdatasync(fd->get()), 0);
    release_range(fd->get(), 0, 16 * kSector);
    fds.push_back(std::move(*fd));
  }
  if (range_cached(fds[0].get(), 0, 16 * kSector) != std::optional<bool>(false))
    GTEST_SKIP() << "the page cache cannot be observed here";
  std::vector<uint8_t> buf(16 * kSector);
  prefetch_range(Prefetch::Read, fds[3].get(), 0, 16 * kSector, buf);  // cached before
  ASSERT_EQ(range_cached(fds[3].get(), 0, 16 * kSector), std::optional<bool>(true));
  // f0's first half is the source of three rounds: held by each, dropped after the last.
  add_round({0, 0}, 8 * kSector, {{1, 0}});
  add_round({0, 0}, 8 * kSector, {{2, 0}});
  add_round({0, 0}, 8 * kSector, {{3, 0}});
  add_round({0, 8 * kSector}, 8 * kSector, {{1, 8 * kSector}});
  // WILLNEED reads the range and no more (a read would also read ahead past it).
  options_.prefetch = Prefetch::Fadvise;
  kernel_.on_call = [](size_t call) {  // the next rounds are queued meanwhile
    if (call == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  const DedupeStats stats = run();
  EXPECT_EQ(stats.ranges_same, 4u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(range_cached(fds[i].get(), 0, 16 * kSector), std::optional<bool>(false)) << i;
  EXPECT_EQ(range_cached(fds[3].get(), 0, 16 * kSector), std::optional<bool>(true));
}

// A destination written while its call was under way: the kernel's refusal is a change of
// the file, not a failure of the dedupe.
TEST_F(DedupeRunTest, ADestinationWrittenDuringItsCallIsAChange) {
  add_files(3, 4);
  add_round({0, 0}, 4 * kSector, {{1, 0}, {2, 0}});
  kernel_.on_call = [&](size_t) { files_.write("f2", test::sector_bytes(1, 5)); };
  kernel_.answer = [](size_t, uint64_t) {
    return btrfs::DedupeOutcome{btrfs::DedupeStatus::Error, EINVAL, 0};
  };
  const DedupeStats stats = run();
  EXPECT_EQ(stats.ranges_changed, 1u);
  EXPECT_EQ(stats.ranges_failed, 1u);  // f1: unchanged, so a failure
  EXPECT_EQ(stats.errors_by_code.at(EINVAL), 1u);
  bool said = false;
  for (const auto& m : stats.messages)
    said = said || m == files_.path("f2") + ": changed since the scan: skipped";
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace btrdedupe
