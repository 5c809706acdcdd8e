// The batch loop (src/run/batch_loop.h) end to end without root: a listed source of batches
// whose files are real files in a temporary directory (the dedupe engine opens them), sums
// given as content ids, and a scripted filesystem (src/run/run_kernel.h) that answers the
// dedupe calls as a script says and keeps the extent references those answers change, so
// the confirmation and the freed-space check read what the calls did.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include "src/run/batch_loop.h"
#include "src/run/run_context.h"
#include "src/run/whole_scan_source.h"
#include "tests/support/memory_tree_source.h"
#include "tests/unit/scripted_filesystem.h"
#include "tests/unit/synthetic_csums.h"

namespace btrdedupe {
namespace {

using namespace test;  // NOLINT: the scripted filesystem's names

// Batches listed in advance. Each file is a real file of its sectors' content ids and one
// extent of its own; the confirmation points each range the kernel shared at the source's
// extent, as the trees would show it.
class ListedBatches final : public BatchSource {
 public:
  ListedBatches(std::string dir, ScriptedFilesystem& fs) : dir_(std::move(dir)), fs_(fs) {
    base_.fs.sectorsize = kSector;
    base_.fs.csum_size = 4;
    base_.roots.push_back({dir_, false});
    btrfs::Subvolume s;
    s.id = kSubvolume;
    base_.subvolumes.push_back(s);
  }

  // A batch of files, each given by its sectors' content ids (equal ids: equal bytes).
  void add_batch(const std::vector<std::vector<uint32_t>>& files) {
    auto batch = make_batch(dir_, "b" + std::to_string(batches_.size()), files, next_disk_);
    for (const auto& e : batch.scan.extents) fs_.referenced.insert(e.disk_bytenr);
    next_disk_ += 1ULL << 30;
    batches_.push_back(std::move(batch));
  }
  // Fingerprinting batch `i` fails.
  void fail_fingerprint_of(size_t i) { failing_fingerprint_ = i; }
  void fail_confirmation() { failing_confirmation_ = true; }

  const ScanResult& base() const override { return base_; }
  btrfs::Result<bool> start(FilesystemReport&) override { return true; }
  btrfs::Result<bool> next(ScanResult& batch) override {
    const auto& listed = batches_[next_].scan;
    batch.files = listed.files;
    batch.extents = listed.extents;
    batch.paths = listed.paths;
    ++next_;
    return next_ < batches_.size();
  }
  RunPosition position(const ScanResult&, bool, uint64_t, FilesystemReport& r) override {
    ++r.windows;
    return {};
  }
  btrfs::Result<FingerprintResult> fingerprint(ScanResult&, const std::function<void(uint64_t)>&,
                                               FilesystemReport&) override {
    if (next_ - 1 == failing_fingerprint_)
      return btrfs::Error{EIO, "reading the csum tree of " + dir_};
    FingerprintResult fp;
    fp.files = batches_[next_ - 1].fp.files;
    return fp;
  }
  const BatchRoles& roles() const override { return all_own_; }
  btrfs::Result<void> keep_short_hashes(const ScanResult&,
                                        std::span<const std::pair<uint32_t, uint64_t>>) override {
    return {};
  }
  btrfs::Result<const ScanResult*> confirm(ScanResult& batch, const std::vector<bool>&) override {
    if (failing_confirmation_) return btrfs::Error{EIO, "searching the tree of " + dir_};
    const auto shared = fs_.shared();
    fs_.referenced.clear();
    for (auto& listed : batches_) {
      for (const auto& s : shared) share(listed.scan, s);
      for (const auto& e : listed.scan.extents) fs_.referenced.insert(e.disk_bytenr);
    }
    batch.extents = batches_[next_ - 1].scan.extents;
    sort_by_physical_identity(batch.extents);
    return &batch;
  }
  btrfs::Result<void> record(const ScanResult&, const RunRecord& run) override {
    records.push_back(run);
    return {};
  }

  std::vector<RunRecord> records;

 private:
  std::string dir_;
  ScriptedFilesystem& fs_;
  ScanResult base_;
  std::vector<SyntheticFs> batches_;
  size_t next_ = 0;
  size_t failing_fingerprint_ = SIZE_MAX;
  bool failing_confirmation_ = false;
  uint64_t next_disk_ = 0;
  BatchRoles all_own_;
};

class BatchLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/btrdedupe-batches-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    source_ = std::make_unique<ListedBatches>(dir_, fs_);
    options_.paths = {dir_};
    options_.dedupe = true;
    options_.io_threads = 1;  // the calls come in plan order
    options_.block_size = 2 * kSector;
    options_.stop = &stop_;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs the listed batches; the files count as unchanged since the run's start unless
  // `changed_since_scan` (a start not known: any file may have changed since).
  FilesystemReport run(bool changed_since_scan = false) {
    FilesystemReport r;
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    r.started = now.tv_sec;
    if (!changed_since_scan) r.started_at = {now.tv_sec, static_cast<uint32_t>(now.tv_nsec)};
    const RunContext context{options_, nullptr, fs_};
    run_batches(*source_, context, r);
    return r;
  }
  static JobReport job(const FilesystemReport& r) {
    JobReport j;
    j.filesystems.push_back(r);
    return j;
  }

  std::string dir_;
  ScriptedFilesystem fs_;
  std::unique_ptr<ListedBatches> source_;
  JobOptions options_;
  std::atomic<bool> stop_{false};
};

// Two batches of copies: each deduped and confirmed in its turn, the figures summed, the
// plan and the extents gone agreeing, and the run recorded once, complete.
TEST_F(BatchLoop, EachBatchIsDedupedAndTheFiguresAddUp) {
  source_->add_batch({seq(1, 8), seq(1, 8)});
  source_->add_batch({seq(20, 4), seq(20, 4), seq(40, 4)});
  const auto r = run();
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.windows, 2u);
  EXPECT_EQ(r.files, 5u);
  EXPECT_EQ(r.whole_file_groups, 2u);
  EXPECT_EQ(r.dedupe.bytes_deduped, 12 * kSector);
  EXPECT_EQ(r.before.shared_bytes, 0u);
  EXPECT_EQ(r.after.shared_bytes, 12 * kSector);
  EXPECT_EQ(r.would_free.bytes, 12 * kSector);
  EXPECT_EQ(r.freed.bytes, 12 * kSector);
  EXPECT_EQ(r.plan_check.freed.extents, 2u);
  EXPECT_EQ(r.plan_check.kept_extents(), 0u);
  EXPECT_EQ(r.after.allocated_bytes, r.before.allocated_bytes - 12 * kSector);
  ASSERT_EQ(source_->records.size(), 1u);
  EXPECT_TRUE(source_->records[0].complete);
  EXPECT_EQ(source_->records[0].files, 5u);
  EXPECT_EQ(job(r).exit_code(), 0);
}

// A range the kernel finds different in a file changed since the scan is left: nothing is
// freed, the plan check says the extent was not deduped, and the run ends with 3.
TEST_F(BatchLoop, ARangeTheKernelFindsDifferentIsLeftAndSaidWhy) {
  source_->add_batch({seq(1, 8), seq(1, 8)});
  fs_.script = [](size_t, uint64_t, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(n, differs());
  };
  const auto r = run(true);
  EXPECT_EQ(r.dedupe.ranges_differ, 1u);
  EXPECT_EQ(r.dedupe.bytes_deduped, 0u);
  EXPECT_EQ(r.freed.bytes, 0u);
  EXPECT_EQ(r.would_free.bytes, 8 * kSector);
  EXPECT_EQ(r.plan_check.not_deduped.extents, 1u);
  EXPECT_EQ(r.after.shared_bytes, 0u);
  EXPECT_EQ(job(r).exit_code(), 3);
}

// A short answer is continued from where the kernel stopped until the range is shared.
TEST_F(BatchLoop, AShortDedupeIsContinuedToTheEnd) {
  source_->add_batch({seq(1, 8), seq(1, 8)});
  fs_.script = [](size_t call, uint64_t length, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(n, same(call == 0 ? 3 * kSector : length));
  };
  const auto r = run();
  EXPECT_EQ(fs_.calls(), 2u);
  EXPECT_EQ(r.dedupe.bytes_deduped, 8 * kSector);
  EXPECT_EQ(r.freed.bytes, 8 * kSector);
  EXPECT_EQ(job(r).exit_code(), 0);
}

// EAGAIN (a send on the destination) once: tried again, and the run is complete.
TEST_F(BatchLoop, AnEagainIsTriedAgain) {
  source_->add_batch({seq(1, 8), seq(1, 8)});
  fs_.script = [](size_t call, uint64_t length, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(n, call == 0 ? failed(EAGAIN) : same(length));
  };
  const auto r = run();
  EXPECT_EQ(r.dedupe.ranges_retried, 1u);
  EXPECT_EQ(r.freed.bytes, 8 * kSector);
  ASSERT_EQ(source_->records.size(), 1u);
  EXPECT_TRUE(source_->records[0].complete);
}

// ENOSPC: no new round starts, the later batches' rounds are not tried, the run is recorded
// as incomplete and ends with 1.
TEST_F(BatchLoop, AFullFilesystemEndsTheRoundsAndTheRunIsIncomplete) {
  source_->add_batch({seq(1, 8), seq(1, 8), seq(30, 8), seq(30, 8)});
  fs_.script = [](size_t, uint64_t, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(n, failed(ENOSPC));
  };
  const auto r = run();
  EXPECT_TRUE(r.dedupe.no_space);
  EXPECT_EQ(fs_.calls(), 1u);
  EXPECT_EQ(r.dedupe.ranges_not_tried, 1u);
  EXPECT_EQ(r.freed.bytes, 0u);
  ASSERT_EQ(source_->records.size(), 1u);
  EXPECT_FALSE(source_->records[0].complete);
  EXPECT_EQ(job(r).exit_code(), 1);
}

// A stop that comes during a round: the round under way finishes, no other round and no
// later batch starts, what was done is confirmed and recorded as incomplete.
TEST_F(BatchLoop, AStopMidRoundFinishesTheRoundAndStartsNoOther) {
  source_->add_batch({seq(1, 8), seq(1, 8), seq(30, 8), seq(30, 8)});
  source_->add_batch({seq(50, 8), seq(50, 8)});
  fs_.on_call = [&](size_t) { stop_ = true; };
  const auto r = run();
  EXPECT_EQ(fs_.calls(), 1u);
  EXPECT_EQ(r.windows, 1u);
  EXPECT_EQ(r.files, 4u);
  EXPECT_TRUE(r.dedupe.stopped);
  EXPECT_EQ(r.dedupe.rounds_not_started, 1u);
  EXPECT_EQ(r.dedupe.bytes_deduped, 8 * kSector);
  EXPECT_EQ(r.freed.bytes, 8 * kSector);
  ASSERT_EQ(source_->records.size(), 1u);
  EXPECT_FALSE(source_->records[0].complete);
}

// A batch whose fingerprint fails ends the run there: the earlier batch's dedupe stands and
// is counted, the error names what failed, and nothing is recorded.
TEST_F(BatchLoop, AFailedBatchEndsTheRunWithoutARecord) {
  source_->add_batch({seq(1, 8), seq(1, 8)});
  source_->add_batch({seq(20, 8), seq(20, 8)});
  source_->add_batch({seq(40, 8), seq(40, 8)});
  source_->fail_fingerprint_of(1);
  const auto r = run();
  EXPECT_NE(r.error.find("reading the csum tree of " + dir_), std::string::npos) << r.error;
  EXPECT_EQ(r.windows, 2u);
  EXPECT_EQ(r.dedupe.bytes_deduped, 8 * kSector);
  EXPECT_EQ(r.freed.bytes, 8 * kSector);
  EXPECT_TRUE(source_->records.empty());
  EXPECT_EQ(job(r).exit_code(), 1);
}

// A confirmation that cannot read the trees: the dedupe stands, the error says where it
// failed, and no space is claimed freed.
TEST_F(BatchLoop, AFailedConfirmationClaimsNothingFreed) {
  source_->add_batch({seq(1, 8), seq(1, 8)});
  source_->fail_confirmation();
  const auto r = run();
  EXPECT_EQ(r.error.rfind("re-reading the tree after dedupe: ", 0), 0u) << r.error;
  EXPECT_EQ(r.dedupe.bytes_deduped, 8 * kSector);
  EXPECT_EQ(r.freed.bytes, 0u);
  EXPECT_TRUE(source_->records.empty());
}

// Without -d: the plan is made and counted, no call is made, the disk is as it was.
TEST_F(BatchLoop, AReportRunPlansWithoutACall) {
  options_.dedupe = false;
  source_->add_batch({seq(1, 8), seq(1, 8)});
  source_->add_batch({seq(20, 8), seq(20, 8)});
  const auto r = run();
  EXPECT_EQ(fs_.calls(), 0u);
  EXPECT_EQ(r.planned_bytes, 16 * kSector);
  EXPECT_EQ(r.would_free.bytes, 16 * kSector);
  EXPECT_EQ(r.freed.bytes, 0u);
  EXPECT_EQ(r.after.shared_bytes, r.before.shared_bytes);
  EXPECT_EQ(r.destination_extents_after, r.destination_extents_before);
  ASSERT_EQ(source_->records.size(), 1u);
  EXPECT_FALSE(source_->records[0].complete);
}

}  // namespace
}  // namespace btrdedupe

namespace btrdedupe {
namespace {

using namespace test;  // NOLINT: the scripted filesystem's names

// A tree held whole (WholeScanSource): sums from csum items in memory, the confirmation a
// new scan read after the batch's extents and files were freed, the plan and the extents
// gone agreeing.
TEST_F(BatchLoop, AWholeTreeIsOneBatchConfirmedByANewScan) {
  auto tree = make_batch(dir_, "w", {seq(1, 8), seq(1, 8), seq(9, 4), seq(9, 4), seq(30, 2)}, 0);
  test::MemoryTreeSource csums;
  add_csum_items(csums, tree);
  for (const auto& e : tree.scan.extents) fs_.referenced.insert(e.disk_bytenr);
  ScanResult as_read = tree.scan;
  size_t files_at_reread = SIZE_MAX;
  WholeReread reread{[&](const ScanResult& batch) -> btrfs::Result<ScanResult> {
                       files_at_reread = batch.files.size();
                       ScanResult now = as_read;
                       for (const auto& s : fs_.shared()) share(now, s);
                       sort_by_physical_identity(now.extents);
                       fs_.referenced.clear();
                       for (const auto& e : now.extents) fs_.referenced.insert(e.disk_bytenr);
                       return now;
                     },
                     false};
  WholeScanSource whole(std::move(tree.scan), nullptr, std::move(reread), 1, &csums);
  FilesystemReport r;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  r.started_at = {now.tv_sec, static_cast<uint32_t>(now.tv_nsec)};
  const RunContext context{options_, nullptr, fs_};
  run_batches(whole, context, r);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.windows, 0u);
  EXPECT_EQ(r.files, 5u);
  EXPECT_EQ(r.fingerprints.extents_from_csums, 5u);
  EXPECT_EQ(r.whole_file_groups, 2u);
  EXPECT_EQ(files_at_reread, 0u);  // freed before the new scan
  EXPECT_EQ(r.dedupe.bytes_deduped, 12 * kSector);
  EXPECT_EQ(r.after.shared_bytes, 12 * kSector);
  EXPECT_EQ(r.freed.bytes, 12 * kSector);
  EXPECT_EQ(r.would_free.bytes, r.freed.bytes);
  EXPECT_EQ(r.plan_check.kept_extents(), 0u);
  EXPECT_EQ(job(r).exit_code(), 0);
}

}  // namespace
}  // namespace btrdedupe
