// What a CatalogSession decides without the kernel, on an in-memory catalog
// (CatalogSession::on): the replay of the last run's scope, a full run's rows merged
// against its scan, and what record() writes for a run that read no tree.
#include <gtest/gtest.h>

#include "src/catalog/catalog.h"
#include "src/catalog/catalog_session.h"

namespace btrdedupe {
namespace {

class CatalogSessionMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Catalog::open_in_memory();
    ASSERT_TRUE(c.ok()) << c.error().message();
    catalog_ = std::move(*c);
  }
  // The session takes the catalog; `catalog` stays usable while the session lives.
  // `options` as the run resolves them (a replay's from the catalog).
  std::unique_ptr<CatalogSession> session(JobOptions& options) {
    catalog = catalog_.get();
    auto replayed = replayed_options(*catalog_, options);
    EXPECT_TRUE(replayed.ok()) << replayed.error().message();
    if (!replayed) return nullptr;
    options = *replayed;
    auto s = CatalogSession::on(std::move(catalog_), options);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return s ? std::move(*s) : nullptr;
  }
  static CatalogFile row(uint64_t size, int64_t mtime_ns, uint64_t parent) {
    CatalogFile f;
    f.size = size;
    f.mtime_ns = mtime_ns;
    f.parent = parent;
    return f;
  }
  // A scanned file with one extent, in the state `row(size, mtime_sec * 1e9, parent)`.
  static void add_file(ScanResult& scan, uint64_t subvolume, uint64_t inode, uint64_t size,
                       int64_t mtime_sec, uint64_t parent) {
    ScannedFile f;
    f.subvolume = subvolume;
    f.inode = inode;
    f.size = size;
    f.mtime_sec = mtime_sec;
    f.parent = parent;
    FileExtent e;
    e.file = static_cast<uint32_t>(scan.files.size());
    e.length = size;
    e.disk_bytenr = (inode + 1) << 20;
    e.disk_num_bytes = size;
    scan.files.push_back(f);
    scan.extents.push_back(e);
  }
  static ScanResult empty_scan() {
    ScanResult scan;
    scan.fs.sectorsize = 4096;
    scan.fs.nodesize = 16384;
    scan.fs.csum_size = 4;
    return scan;
  }
  std::unique_ptr<Catalog> catalog_;
  Catalog* catalog = nullptr;
};

TEST_F(CatalogSessionMemory, NoPathsReplayTheLastRunsRootsAndOptions) {
  ASSERT_TRUE(catalog_
                  ->set_scope({{"/mnt/a", "/mnt/b"},
                               "recursive=0 min_size=4096 block_size=65536 partial=0 readonly=1 "
                               "subvols=5,6 exclude_subvols=7 all_subvols=1",
                               true})
                  .ok());
  JobOptions o;
  o.recursive = true;
  auto s = session(o);
  ASSERT_TRUE(s);
  EXPECT_EQ(o.paths, (std::vector<std::string>{"/mnt/a", "/mnt/b"}));
  EXPECT_FALSE(o.recursive);
  EXPECT_EQ(o.min_file_size, 4096u);
  EXPECT_EQ(o.block_size, 65536u);
  EXPECT_FALSE(o.partial);
  EXPECT_TRUE(o.dedupe_readonly);
  EXPECT_EQ(o.subvolumes.include, (std::vector<std::string>{"5", "6"}));
  EXPECT_EQ(o.subvolumes.exclude, (std::vector<std::string>{"7"}));
  EXPECT_TRUE(o.subvolumes.all);
  EXPECT_TRUE(o.dedupe);  // the last run deduped: so does its replay
}

TEST_F(CatalogSessionMemory, GivenPathsKeepTheirOwnOptions) {
  ASSERT_TRUE(catalog_->set_scope({{"/mnt/a"}, "recursive=0 min_size=4096 block_size=65536 "
                                                "partial=0 readonly=1", true})
                  .ok());
  JobOptions o;
  o.paths = {"/mnt/b"};
  o.recursive = true;
  auto s = session(o);
  ASSERT_TRUE(s);
  EXPECT_EQ(o.paths, (std::vector<std::string>{"/mnt/b"}));
  EXPECT_TRUE(o.recursive);
  EXPECT_EQ(o.min_file_size, 0u);
  EXPECT_FALSE(o.dedupe);
}

TEST_F(CatalogSessionMemory, AnEmptyCatalogHasNoRunToReplay) {
  const auto o = replayed_options(*catalog_, JobOptions{});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message().find("holds no earlier run to repeat"), std::string::npos)
      << o.error().message();
}

TEST_F(CatalogSessionMemory, ARunWithExcludePatternsIsNotReplayed) {
  ASSERT_TRUE(catalog_->set_scope({{"/mnt/a"}, "recursive=1 min_size=0 block_size=131072 "
                                                "partial=1 readonly=0 exclude=*.o", false})
                  .ok());
  const auto o = replayed_options(*catalog_, JobOptions{});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message().find("--exclude"), std::string::npos) << o.error().message();
}

// A full run whose files all kept their rows' state: nothing to fingerprint, the rows of
// files gone from the scan removed, a moved file's directory updated, and record()
// commits all of it with the run.
TEST_F(CatalogSessionMemory, AFullRunMergesItsScanAgainstTheRows) {
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(8192, 2'000'000'000, 256), {}).ok());
  ASSERT_TRUE(catalog_->put_file({5, 258}, row(8192, 3'000'000'000, 256), {}).ok());
  ASSERT_TRUE(catalog_->put_file({5, 259}, row(8192, 4'000'000'000, 256), {}).ok());  // gone
  JobOptions o;
  o.paths = {"/mnt/a"};
  auto s = session(o);
  ASSERT_TRUE(s);
  // No roots: fingerprint() reads nothing (btrdedupe::fingerprint returns at once).
  ScanResult scan = empty_scan();
  add_file(scan, 5, 257, 8192, 2, 256);
  add_file(scan, 5, 258, 8192, 3, 300);  // renamed into directory 300
  CatalogStats stats;
  auto fp = s->fingerprint(scan, stats);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  EXPECT_TRUE(stats.used);
  EXPECT_FALSE(stats.incremental);
  EXPECT_EQ(stats.files_changed, 0u);
  EXPECT_EQ(stats.files_known, 2u);
  EXPECT_EQ(stats.stale_rows, 1u);
  EXPECT_EQ(stats.candidates, 0u);
  EXPECT_FALSE(catalog->file({5, 259}));
  ASSERT_TRUE(catalog->file({5, 258}));
  EXPECT_EQ(catalog->file({5, 258})->parent, 300u);
  EXPECT_EQ(catalog->file({5, 257})->parent, 256u);

  RunRecord run;
  run.started = 100;
  run.files = 2;
  ASSERT_TRUE(s->record(scan, nullptr, run).ok());
  EXPECT_EQ(catalog->runs().size(), 1u);
  // A scan without roots records no generation and leaves `pending` as it was.
  EXPECT_TRUE(catalog->subvolume_generations().empty());
  EXPECT_FALSE(catalog->pending());
  EXPECT_FALSE(catalog->writing());
  EXPECT_TRUE(catalog->begin().ok());  // the run's transaction was committed
  EXPECT_TRUE(catalog->writing());
}

// A run that read no tree (nothing changed): record() writes the scanned subvolumes'
// generations, the run, and whether duplicates may still wait (an incomplete run).
TEST_F(CatalogSessionMemory, ARecordedRunThatDidNotFinishLeavesDuplicatesPending) {
  JobOptions o;
  o.paths = {"/mnt/a"};
  auto s = session(o);
  ASSERT_TRUE(s);
  ScanResult scan = empty_scan();
  scan.roots.push_back({"/mnt/a", false});
  btrfs::Subvolume sv;
  sv.id = 5;
  scan.subvolumes.push_back(sv);
  RunRecord run;
  run.started = 100;
  run.complete = false;
  ASSERT_TRUE(s->record(scan, nullptr, run).ok());
  EXPECT_TRUE(catalog->pending());
  EXPECT_EQ(catalog->subvolume_generations().count(5), 1u);
  EXPECT_EQ(catalog->runs().size(), 1u);
  EXPECT_EQ(catalog->last_run_started(), std::optional<int64_t>{100});
}

TEST_F(CatalogSessionMemory, ACompleteRunClearsPending) {
  ASSERT_TRUE(catalog_->set_pending(true).ok());
  JobOptions o;
  o.paths = {"/mnt/a"};
  auto s = session(o);
  ASSERT_TRUE(s);
  ScanResult scan = empty_scan();
  scan.roots.push_back({"/mnt/a", false});
  RunRecord run;
  run.complete = true;
  ASSERT_TRUE(s->record(scan, nullptr, run).ok());
  EXPECT_FALSE(catalog->pending());
}

}  // namespace
}  // namespace btrdedupe
