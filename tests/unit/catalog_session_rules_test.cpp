// The rules a CatalogSession chooses at unchanged_since_last_run (catalog_rules.h), as a
// run sees them: a side run within the catalog's roots against the catalog's own run, and
// a dedupe run after pending duplicates. On an in-memory catalog, with a reader that
// reports fixed generations for a temporary directory (no tree is read).
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "src/catalog/catalog.h"
#include "src/catalog/catalog_session.h"
#include "tests/support/memory_tree_source.h"

namespace btrdedupe {
namespace {

constexpr uint64_t kSubvolume = 5, kSector = 4096;

// The filesystem's identity and generations, fixed; checksums from memory; no targeted
// reader.
class FixedGenerations final : public RootReader {
 public:
  std::unordered_map<uint64_t, uint64_t> now;
  mutable test::MemoryTreeSource csums{BTRFS_CSUM_TREE_OBJECTID};  // searched through const

  ReaderKind kind() const override { return ReaderKind::Tree; }
  btrfs::Result<ScanResult> scan(const std::string&, const ScanOptions&) const override {
    return btrfs::Error{ENOTSUP, "no tree is read here"};
  }
  btrfs::Result<std::string> fsid(const std::string&) const override {
    return std::string("test-fs");
  }
  btrfs::Result<std::unordered_map<uint64_t, uint64_t>> generations(
      const std::string&) const override {
    return now;
  }
  btrfs::TreeSource* checksums() const override { return &csums; }
  btrfs::Result<std::unique_ptr<IncrementalScan>> targeted(const ScanScope&, const ScanOptions&,
                                                          ScanResult&) const override {
    return std::unique_ptr<IncrementalScan>{};  // the run reads its roots whole
  }
};

class CatalogSessionRules : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = ::testing::TempDir() + "catalog-rules-XXXXXX";
    ASSERT_TRUE(::mkdtemp(base.data()));
    char* real = ::realpath(base.c_str(), nullptr);
    ASSERT_TRUE(real);
    root_ = real;
    std::free(real);
    sub_ = root_ + "/a";
    ASSERT_EQ(::mkdir(sub_.c_str(), 0755), 0);
    reader_.now = {{kSubvolume, 11}};
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // The options text a run of `o` records as its scope (whatever spelling the session
  // uses), from a session of its own.
  std::string options_text(JobOptions o) {
    auto c = Catalog::open_in_memory();
    Catalog* raw = c->get();
    o.paths = {root_};
    auto s = CatalogSession::on(std::move(*c), o, reader_);
    EXPECT_TRUE((*s)->unchanged_since_last_run(o).ok());
    return raw->scope()->options;
  }
  // A catalog whose last run was of root_, at generation 10, with a row for a file in
  // sub_ (inode 257) and one outside it (258).
  std::unique_ptr<CatalogSession> session_after_last_run(JobOptions o, bool pending) {
    auto c = Catalog::open_in_memory();
    EXPECT_TRUE(c.ok());
    catalog = c->get();
    EXPECT_TRUE(catalog->set_scope({{root_}, options_text(o), o.dedupe}).ok());
    EXPECT_TRUE(catalog->set_subvolume_generations({{kSubvolume, 10}}).ok());
    EXPECT_TRUE(catalog->set_pending(pending).ok());
    EXPECT_TRUE(catalog->put_file({kSubvolume, 257}, row(2), {}).ok());
    EXPECT_TRUE(catalog->put_file({kSubvolume, 258}, row(3), {}).ok());
    auto s = CatalogSession::on(std::move(*c), o, reader_);
    EXPECT_TRUE(s.ok());
    return std::move(*s);
  }
  static CatalogFile row(int64_t mtime_sec) {
    CatalogFile f;
    f.size = 2 * kSector;
    f.mtime_ns = mtime_sec * 1'000'000'000LL;
    f.parent = 256;
    return f;
  }
  // The scan of `root` holding file 257 as its row says, with its sums in the csum tree.
  ScanResult scan_of(const std::string& root) {
    ScanResult scan;
    scan.fs.sectorsize = kSector;
    scan.fs.nodesize = 16384;
    scan.fs.csum_size = 4;
    scan.fs.csum_type = btrfs::CsumType::Crc32c;
    scan.roots.push_back({root, false});
    btrfs::Subvolume sv;
    sv.id = kSubvolume;
    scan.subvolumes.push_back(sv);
    ScannedFile f;
    f.subvolume = kSubvolume;
    f.inode = 257;
    f.size = 2 * kSector;
    f.mtime_sec = 2;
    f.parent = 256;
    FileExtent e;
    e.length = e.disk_num_bytes = 2 * kSector;
    e.disk_bytenr = 1 << 20;
    scan.files.push_back(f);
    scan.extents.push_back(e);
    reader_.csums.add(BTRFS_CSUM_TREE_OBJECTID,
                      {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, e.disk_bytenr},
                      {1, 2, 3, 4, 5, 6, 7, 8});
    return scan;
  }
  static JobOptions options(const std::string& path, bool dedupe = false) {
    JobOptions o;
    o.paths = {path};
    o.dedupe = dedupe;
    o.io_threads = 1;
    return o;
  }

  FixedGenerations reader_;
  std::string root_, sub_;
  Catalog* catalog = nullptr;  // the session's, while it lives
};

TEST_F(CatalogSessionRules, ASideRunKeepsTheCatalogsScopeRowsAndGenerations) {
  auto s = session_after_last_run(options(sub_), false);
  const auto unchanged = s->unchanged_since_last_run(options(sub_));
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message();
  EXPECT_FALSE(*unchanged);
  EXPECT_EQ(catalog->scope()->roots, (std::vector<std::string>{root_}));
  EXPECT_FALSE(s->may_take_windows());

  ScanResult scan = scan_of(sub_);
  CatalogStats stats;
  auto fp = s->fingerprint(scan, stats, 1);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  EXPECT_FALSE(stats.incremental);
  EXPECT_EQ(stats.files_known, 1u);
  EXPECT_EQ(stats.stale_rows, 0u);
  EXPECT_TRUE(catalog->file({kSubvolume, 258}));  // outside its roots, not gone

  RunRecord run;
  run.complete = true;
  ASSERT_TRUE(s->record(scan, nullptr, run).ok());
  EXPECT_EQ(catalog->subvolume_generations().at(kSubvolume), 10u);
  EXPECT_EQ(catalog->runs().size(), 1u);
}

TEST_F(CatalogSessionRules, TheCatalogsOwnRunRemovesRowsItDidNotMeetAndTakesTheGenerations) {
  auto s = session_after_last_run(options(root_), false);
  const auto unchanged = s->unchanged_since_last_run(options(root_));
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message();
  EXPECT_FALSE(*unchanged);
  EXPECT_TRUE(s->may_take_windows());

  ScanResult scan = scan_of(root_);
  CatalogStats stats;
  auto fp = s->fingerprint(scan, stats, 1);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  EXPECT_EQ(stats.files_known, 1u);
  EXPECT_EQ(stats.files_changed, 0u);
  EXPECT_EQ(stats.stale_rows, 1u);
  EXPECT_FALSE(catalog->file({kSubvolume, 258}));

  RunRecord run;
  run.complete = true;
  ASSERT_TRUE(s->record(scan, nullptr, run).ok());
  EXPECT_EQ(catalog->subvolume_generations().at(kSubvolume), 11u);
}

TEST_F(CatalogSessionRules, ADedupeRunAfterPendingDuplicatesCountsEveryFileAsChanged) {
  reader_.now = {{kSubvolume, 10}};  // nothing written since
  auto s = session_after_last_run(options(root_, true), true);
  const auto unchanged = s->unchanged_since_last_run(options(root_, true));
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message();
  EXPECT_FALSE(*unchanged);  // the duplicates still wait

  ScanResult scan = scan_of(root_);
  CatalogStats stats;
  auto fp = s->fingerprint(scan, stats, 1);
  ASSERT_TRUE(fp.ok()) << fp.error().message();
  EXPECT_EQ(stats.files_changed, 1u);
  EXPECT_EQ(stats.files_known, 0u);
}

TEST_F(CatalogSessionRules, WithoutADedupePendingDuplicatesLeaveAnUnchangedTreeUnread) {
  reader_.now = {{kSubvolume, 10}};
  auto s = session_after_last_run(options(root_), true);
  const auto unchanged = s->unchanged_since_last_run(options(root_));
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message();
  EXPECT_TRUE(*unchanged);
}

}  // namespace
}  // namespace btrdedupe
