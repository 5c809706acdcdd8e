// The dedupe engine's handling of the kernel's answers, with a scripted DedupeKernel in
// place of FIDEDUPERANGE: the files are ordinary files in a temporary directory (the engine
// only opens and fstats them), so no root and no btrfs are needed. The engine on real btrfs:
// tests/btrfs/dedupe_engine_test.cpp.
#include "src/dedupe/dedupe_engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "src/dedupe/dedupe_kernel.h"

namespace btrdedupe {
namespace {

constexpr uint64_t kSector = 4096;

// One call as the stand-in saw it, files named by inode.
struct SeenCall {
  uint64_t src_inode = 0;
  uint64_t src_offset = 0;
  uint64_t length = 0;
  std::vector<std::pair<uint64_t, uint64_t>> destinations;  // (inode, offset)
  bool operator==(const SeenCall&) const = default;
};

std::ostream& operator<<(std::ostream& os, const SeenCall& c) {
  os << "{src " << c.src_inode << " @" << c.src_offset << " +" << c.length << " ->";
  for (const auto& [ino, off] : c.destinations) os << " " << ino << " @" << off;
  return os << "}";
}

uint64_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// Records every call and answers it with `answer` (the call's index from 0, and the call).
class ScriptedKernel final : public DedupeKernel {
 public:
  using Answer = std::function<btrfs::Result<btrfs::DedupeCall>(size_t, const SeenCall&)>;
  Answer script;

  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) override {
    SeenCall c{inode_of(src_fd), src_offset, length, {}};
    for (const auto& d : destinations) c.destinations.emplace_back(inode_of(d.fd), d.offset);
    std::lock_guard lock(mu_);
    calls_.push_back(c);
    return script(calls_.size() - 1, c);
  }

  std::vector<SeenCall> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<SeenCall> calls_;
};

btrfs::DedupeOutcome same(uint64_t bytes) { return {btrfs::DedupeStatus::Same, 0, bytes}; }
btrfs::DedupeOutcome differs() { return {btrfs::DedupeStatus::Differs, 0, 0}; }
btrfs::DedupeOutcome failed(int code) { return {btrfs::DedupeStatus::Error, code, 0}; }

// The kernel's answer to `c`: the whole length issued, one outcome per destination.
btrfs::DedupeCall answer(const SeenCall& c, std::vector<btrfs::DedupeOutcome> outcomes) {
  EXPECT_EQ(outcomes.size(), c.destinations.size()) << c;
  return {c.length, c.length, std::move(outcomes)};
}

// Each destination shares the whole length asked.
btrfs::DedupeCall all_same(const SeenCall& c) {
  return answer(c, std::vector<btrfs::DedupeOutcome>(c.destinations.size(), same(c.length)));
}

class DedupeEngineAnswers : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/btrdedupe-engine-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    scan_.fs.sectorsize = kSector;
    scan_.roots.push_back({dir_, false});
    options_.kernel = &kernel_;
    options_.io_threads = 1;  // one worker: the calls come in plan order
    options_.eagain_wait_ms = 0;
    kernel_.script = [](size_t, const SeenCall& c) { return all_same(c); };
  }

  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A regular file of `size` bytes, scanned as it is now: returns its index in the scan.
  uint32_t add_file(uint64_t size) {
    const auto f = static_cast<uint32_t>(scan_.files.size());
    const std::string name = "f" + std::to_string(f);
    const std::string p = dir_ + "/" + name;
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0) << p;
    const std::vector<char> bytes(size, 'x');
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(size));
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    ::close(fd);
    ScannedFile file;
    file.subvolume = 5;
    file.inode = st.st_ino;
    file.size = size;
    file.mtime_sec = st.st_mtim.tv_sec;
    file.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    file.path_node = scan_.paths.add(PathTable::kRoot, name);
    scan_.files.push_back(file);
    return f;
  }

  uint64_t ino(uint32_t f) const { return scan_.files[f].inode; }

  void add_round(RangeRef source, uint64_t length, std::vector<RangeRef> destinations) {
    DedupeRound r;
    r.source = source;
    r.length = length;
    r.destinations = std::move(destinations);
    plan_.planned_bytes += length * r.destinations.size();
    plan_.rounds.push_back(std::move(r));
  }

  // A scan start after every file's last inode change: the files count as unchanged since.
  void scan_started_now() {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    options_.scan_started = {now.tv_sec, static_cast<uint32_t>(now.tv_nsec)};
    for (const auto& f : scan_.files) {
      struct stat st {};
      ASSERT_EQ(::stat((dir_ + "/" + scan_.paths.path(f.path_node)).c_str(), &st), 0);
      ASSERT_LT(std::make_pair(st.st_ctim.tv_sec, st.st_ctim.tv_nsec),
                std::make_pair(now.tv_sec, now.tv_nsec));
    }
  }

  DedupeStats run() { return run_dedupe(scan_, plan_, options_); }

  std::string dir_;
  ScanResult scan_;
  DedupePlan plan_;
  DedupeOptions options_;
  ScriptedKernel kernel_;
};

// A destination the kernel shares only in part continues alone from where it stopped, the
// others being done, until its whole range is shared.
TEST_F(DedupeEngineAnswers, ShortAnswerContinuesFromWhereTheKernelStopped) {
  const auto a = add_file(8 * kSector), b = add_file(8 * kSector), c = add_file(8 * kSector);
  add_round({a, kSector}, 6 * kSector, {{b, 0}, {c, 2 * kSector}});
  kernel_.script = [](size_t n, const SeenCall& call) -> btrfs::Result<btrfs::DedupeCall> {
    if (n == 0) return answer(call, {same(6 * kSector), same(kSector)});  // c: one sector
    if (n == 1) return answer(call, {same(2 * kSector)});                 // c: two more
    return all_same(call);                                                // c: the rest
  };
  const auto stats = run();
  const std::vector<SeenCall> expected{
      {ino(a), kSector, 6 * kSector, {{ino(b), 0}, {ino(c), 2 * kSector}}},
      {ino(a), 2 * kSector, 5 * kSector, {{ino(c), 3 * kSector}}},
      {ino(a), 4 * kSector, 3 * kSector, {{ino(c), 5 * kSector}}},
  };
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_EQ(stats.calls, 3u);
  EXPECT_EQ(stats.bytes_deduped, 12 * kSector);
  EXPECT_EQ(stats.bytes_by_subvolume.at(5), 12 * kSector);
  EXPECT_EQ(stats.ranges_same, 2u);
  EXPECT_EQ(stats.ranges_failed, 0u);
}

// A Same with no progress takes the destination out: no round loops without progress.
TEST_F(DedupeEngineAnswers, SameWithoutProgressEndsTheDestination) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});
  kernel_.script = [](size_t n, const SeenCall& call) {
    return answer(call, {same(n == 0 ? kSector : 0)});
  };
  const auto stats = run();
  ASSERT_EQ(kernel_.calls().size(), 2u);
  EXPECT_EQ(kernel_.calls()[1], (SeenCall{ino(a), kSector, 3 * kSector, {{ino(b), kSector}}}));
  EXPECT_EQ(stats.bytes_deduped, kSector);
  EXPECT_EQ(stats.ranges_same, 0u);  // never done whole
}

// EAGAIN (a send on the destination's subvolume) is tried again eagain_retries times, that
// destination alone; each EAGAIN but the last counts as retried, the last as failed.
TEST_F(DedupeEngineAnswers, EagainIsRetriedThenFails) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector), c = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}, {c, 0}});
  options_.eagain_retries = 2;
  kernel_.script = [](size_t n, const SeenCall& call) {
    if (n == 0) return answer(call, {same(4 * kSector), failed(EAGAIN)});
    return answer(call, {failed(EAGAIN)});
  };
  const auto stats = run();
  const SeenCall retry{ino(a), 0, 4 * kSector, {{ino(c), 0}}};
  const std::vector<SeenCall> expected{
      {ino(a), 0, 4 * kSector, {{ino(b), 0}, {ino(c), 0}}}, retry, retry};
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_EQ(stats.ranges_retried, 2u);
  EXPECT_EQ(stats.ranges_failed, 1u);
  EXPECT_EQ(stats.errors_by_code.at(EAGAIN), 1u);
  EXPECT_EQ(stats.ranges_same, 1u);
  EXPECT_EQ(stats.bytes_deduped, 4 * kSector);
  EXPECT_EQ(stats.calls, 3u);
}

TEST_F(DedupeEngineAnswers, EagainRetrySharesTheRange) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});
  options_.eagain_retries = 3;
  kernel_.script = [](size_t n, const SeenCall& call) {
    return n == 0 ? answer(call, {failed(EAGAIN)}) : all_same(call);
  };
  const auto stats = run();
  EXPECT_EQ(kernel_.calls().size(), 2u);
  EXPECT_EQ(stats.ranges_retried, 1u);
  EXPECT_EQ(stats.ranges_failed, 0u);
  EXPECT_EQ(stats.ranges_same, 1u);
  EXPECT_EQ(stats.bytes_deduped, 4 * kSector);
}

// No retries allowed: the first EAGAIN is a failure.
TEST_F(DedupeEngineAnswers, EagainWithoutRetriesFails) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});
  options_.eagain_retries = 0;
  kernel_.script = [](size_t, const SeenCall& call) { return answer(call, {failed(EAGAIN)}); };
  const auto stats = run();
  EXPECT_EQ(kernel_.calls().size(), 1u);
  EXPECT_EQ(stats.ranges_retried, 0u);
  EXPECT_EQ(stats.ranges_failed, 1u);
}

// The first ENOSPC: no round starts after it, and no pending EAGAIN retry; what was left is
// counted as not tried.
TEST_F(DedupeEngineAnswers, FirstEnospcStopsNewRounds) {
  const auto a = add_file(16 * kSector), b = add_file(16 * kSector), c = add_file(16 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});                        // EAGAIN: a retry pending
  add_round({a, 4 * kSector}, 4 * kSector, {{b, 4 * kSector}});    // ENOSPC
  add_round({a, 8 * kSector}, 4 * kSector, {{b, 8 * kSector}});    // not tried
  add_round({a, 12 * kSector}, 4 * kSector, {{b, 12 * kSector}, {c, 0}});  // not tried (2)
  kernel_.script = [](size_t n, const SeenCall& call) -> btrfs::Result<btrfs::DedupeCall> {
    if (n == 0) return answer(call, {failed(EAGAIN)});
    if (n == 1) return answer(call, {failed(ENOSPC)});
    return all_same(call);
  };
  const auto stats = run();
  const std::vector<SeenCall> expected{
      {ino(a), 0, 4 * kSector, {{ino(b), 0}}},
      {ino(a), 4 * kSector, 4 * kSector, {{ino(b), 4 * kSector}}},
  };
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_TRUE(stats.no_space);
  EXPECT_EQ(stats.ranges_failed, 1u);
  EXPECT_EQ(stats.errors_by_code.at(ENOSPC), 1u);
  EXPECT_EQ(stats.ranges_retried, 1u);
  EXPECT_EQ(stats.ranges_not_tried, 4u);  // the pending retry, and rounds 2 and 3
  EXPECT_EQ(stats.bytes_deduped, 0u);
  ASSERT_FALSE(stats.messages.empty());
  EXPECT_NE(stats.messages.front().find("ENOSPC"), std::string::npos);
  EXPECT_NE(stats.messages.front().find("4 range(s) not tried"), std::string::npos);
}

// The whole call refused with ENOSPC counts every destination of it as failed.
TEST_F(DedupeEngineAnswers, EnospcOfTheWholeCallStopsNewRounds) {
  const auto a = add_file(8 * kSector), b = add_file(8 * kSector), c = add_file(8 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}, {c, 0}});
  add_round({a, 4 * kSector}, 4 * kSector, {{b, 4 * kSector}, {c, 4 * kSector}});
  kernel_.script = [](size_t, const SeenCall&) -> btrfs::Result<btrfs::DedupeCall> {
    return btrfs::Error{ENOSPC, "FIDEDUPERANGE"};
  };
  const auto stats = run();
  EXPECT_EQ(kernel_.calls().size(), 1u);
  EXPECT_TRUE(stats.no_space);
  EXPECT_EQ(stats.ranges_failed, 2u);
  EXPECT_EQ(stats.ranges_not_tried, 2u);
  EXPECT_EQ(stats.calls, 0u);  // a refused call is not counted as made
}

// DIFFERS on files unchanged since the scan: the sums proposed more than is equal, so the
// range is narrowed by halves to the sectors that differ (here the third of four).
TEST_F(DedupeEngineAnswers, DiffersOnUnchangedFilesIsNarrowed) {
  const auto a = add_file(8 * kSector), b = add_file(8 * kSector);
  add_round({a, kSector}, 4 * kSector, {{b, 2 * kSector}});
  scan_started_now();
  const uint64_t differing = kSector + 2 * kSector;  // source offset of the sector that differs
  kernel_.script = [&](size_t, const SeenCall& call) {
    const bool covers = call.src_offset <= differing && differing < call.src_offset + call.length;
    return covers ? answer(call, {differs()}) : all_same(call);
  };
  const auto stats = run();
  const auto src = ino(a), dst = ino(b);
  const std::vector<SeenCall> expected{
      {src, kSector, 4 * kSector, {{dst, 2 * kSector}}},      // the round: DIFFERS
      {src, kSector, 2 * kSector, {{dst, 2 * kSector}}},      // first half: Same
      {src, 3 * kSector, 2 * kSector, {{dst, 4 * kSector}}},  // second half: DIFFERS
      {src, 3 * kSector, kSector, {{dst, 4 * kSector}}},      // its first sector: DIFFERS
      {src, 4 * kSector, kSector, {{dst, 5 * kSector}}},      // its last: Same
  };
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_EQ(stats.ranges_unequal, 1u);
  EXPECT_EQ(stats.ranges_differ, 0u);
  EXPECT_EQ(stats.bytes_narrowed, 3 * kSector);
  EXPECT_EQ(stats.bytes_deduped, 3 * kSector);
  EXPECT_EQ(stats.bytes_by_subvolume.at(5), 3 * kSector);
  EXPECT_EQ(stats.calls, 5u);
  EXPECT_EQ(stats.ranges_same, 0u);
}

// DIFFERS after a short answer: narrowing starts where the shared part ended.
TEST_F(DedupeEngineAnswers, DiffersAfterAShortAnswerNarrowsTheRest) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});
  scan_started_now();
  kernel_.script = [](size_t n, const SeenCall& call) {
    if (n == 0) return answer(call, {same(2 * kSector)});
    if (n == 1) return answer(call, {differs()});
    return all_same(call);  // both halves of the rest turn out equal
  };
  const auto stats = run();
  const auto src = ino(a), dst = ino(b);
  const std::vector<SeenCall> expected{
      {src, 0, 4 * kSector, {{dst, 0}}},
      {src, 2 * kSector, 2 * kSector, {{dst, 2 * kSector}}},
      {src, 2 * kSector, kSector, {{dst, 2 * kSector}}},
      {src, 3 * kSector, kSector, {{dst, 3 * kSector}}},
  };
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_EQ(stats.ranges_unequal, 1u);
  EXPECT_EQ(stats.bytes_narrowed, 2 * kSector);
  EXPECT_EQ(stats.bytes_deduped, 4 * kSector);
}

// DIFFERS on a file whose inode changed after the scan began (same size and mtime, so it
// still opens as the file scanned): a change, left as it was, with no narrowing call.
TEST_F(DedupeEngineAnswers, DiffersOnAFileChangedSinceTheScanIsLeftAlone) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});
  scan_started_now();
  // A later inode change: past the clock's tick, so its ctime is after scan_started.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string bpath = dir_ + "/" + scan_.paths.path(scan_.files[b].path_node);
  ASSERT_EQ(::chmod(bpath.c_str(), 0600), 0);
  struct stat st {};
  ASSERT_EQ(::stat(bpath.c_str(), &st), 0);
  ASSERT_GE(std::make_pair(static_cast<int64_t>(st.st_ctim.tv_sec),
                           static_cast<int64_t>(st.st_ctim.tv_nsec)),
            std::make_pair(options_.scan_started.sec,
                           static_cast<int64_t>(options_.scan_started.nsec)));
  kernel_.script = [](size_t, const SeenCall& call) { return answer(call, {differs()}); };
  const auto stats = run();
  EXPECT_EQ(kernel_.calls().size(), 1u);
  EXPECT_EQ(stats.ranges_differ, 1u);
  EXPECT_EQ(stats.ranges_unequal, 0u);
  EXPECT_EQ(stats.bytes_narrowed, 0u);
  EXPECT_EQ(stats.bytes_deduped, 0u);
  EXPECT_EQ(stats.calls, 1u);
}

// A file whose size or mtime changed since the scan is never handed to the kernel.
TEST_F(DedupeEngineAnswers, AFileWrittenSinceTheScanIsNotCalled) {
  const auto a = add_file(4 * kSector), b = add_file(4 * kSector), c = add_file(4 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}, {c, 0}});
  const std::string cpath = dir_ + "/" + scan_.paths.path(scan_.files[c].path_node);
  ASSERT_EQ(::truncate(cpath.c_str(), 3 * kSector), 0);
  const auto stats = run();
  const std::vector<SeenCall> expected{{ino(a), 0, 4 * kSector, {{ino(b), 0}}}};
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_EQ(stats.ranges_changed, 1u);
  EXPECT_EQ(stats.ranges_same, 1u);
}

// A stop before the run: no call, every round left for a later run.
TEST_F(DedupeEngineAnswers, StopBeforeTheRunLeavesEveryRound) {
  const auto a = add_file(8 * kSector), b = add_file(8 * kSector), c = add_file(8 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}, {c, 0}});
  add_round({a, 4 * kSector}, 2 * kSector, {{b, 4 * kSector}});
  const std::atomic<bool> stop{true};
  std::vector<uint8_t> started;
  options_.stop = &stop;
  options_.round_started = &started;
  const auto stats = run();
  EXPECT_TRUE(kernel_.calls().empty());
  EXPECT_TRUE(stats.stopped);
  EXPECT_EQ(stats.rounds_not_started, 2u);
  EXPECT_EQ(stats.bytes_not_started, 2 * 4 * kSector + 2 * kSector);
  EXPECT_EQ(started, (std::vector<uint8_t>{0, 0}));
}

// A stop during a round: that round finishes (a short answer still continues), no later
// round starts, and those are left with their bytes.
TEST_F(DedupeEngineAnswers, StopDuringARoundFinishesItAndStartsNoOther) {
  const auto a = add_file(16 * kSector), b = add_file(16 * kSector), c = add_file(16 * kSector);
  add_round({a, 0}, 4 * kSector, {{b, 0}});
  add_round({a, 4 * kSector}, 4 * kSector, {{b, 4 * kSector}, {c, 4 * kSector}});
  add_round({a, 8 * kSector}, 8 * kSector, {{b, 8 * kSector}});
  std::atomic<bool> stop{false};
  std::vector<uint8_t> started;
  options_.stop = &stop;
  options_.round_started = &started;
  kernel_.script = [&](size_t n, const SeenCall& call) {
    if (n == 0) {
      stop = true;  // a signal while the first round's call is in the kernel
      return answer(call, {same(kSector)});
    }
    return all_same(call);
  };
  const auto stats = run();
  const std::vector<SeenCall> expected{
      {ino(a), 0, 4 * kSector, {{ino(b), 0}}},
      {ino(a), kSector, 3 * kSector, {{ino(b), kSector}}},
  };
  EXPECT_EQ(kernel_.calls(), expected);
  EXPECT_TRUE(stats.stopped);
  EXPECT_EQ(stats.ranges_same, 1u);
  EXPECT_EQ(stats.bytes_deduped, 4 * kSector);
  EXPECT_EQ(stats.rounds_not_started, 2u);
  EXPECT_EQ(stats.bytes_not_started, 2 * 4 * kSector + 8 * kSector);
  EXPECT_EQ(started, (std::vector<uint8_t>{1, 0, 0}));
}

}  // namespace
}  // namespace btrdedupe
