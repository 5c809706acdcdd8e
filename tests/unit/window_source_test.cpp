// Windowed runs without the kernel: a CatalogSession on an in-memory catalog, over an
// IncrementalScan of an in-memory subvolume tree whose csum tree is in the same source.
// What the windows decide, each file's role, the twins they take from earlier and later
// windows and the groups they count, is tested as a run uses it (run_batches over a WindowSource), and against
// the same tree read as one window.
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"
#include "src/catalog/catalog_session.h"
#include "src/read/scanned_file.h"
#include "src/run/batch_loop.h"
#include "src/run/window_source.h"
#include "src/run/window_twins.h"
#include "tests/unit/synthetic_tree.h"

namespace btrdedupe::test {
namespace {

using RoleCounts = std::map<BatchRole, size_t>;

size_t count_of(const RoleCounts& counts, BatchRole role) {
  const auto it = counts.find(role);
  return it == counts.end() ? 0 : it->second;
}

constexpr uint64_t kSub = 256, kSnap = 300, kSector = 4096;
const char* const kRoot = "/synthetic/sub";
const char* const kSnapRoot = "/synthetic/snap";

// A sector's "crc32c": distinct per (content, sector), never 0xffffffff (which proves nothing).
uint32_t sector_sum(uint64_t content, uint64_t sector) {
  return static_cast<uint32_t>(((content * 64 + sector + 1) * 2654435761ULL) >> 7) & 0x7fffffff;
}

class WindowedRunMemory : public ::testing::Test {
 protected:
  WindowedRunMemory() {
    all_.push_back(subvolume_below_top(kSub, "sub"));
  }

  // `copies` directories, each holding the same `shared` files (file j: 2 + j % 3 sectors
  // of content j, in an extent of its own) and one file of its own: a tree of unshared
  // copies, each copy's files next to each other in inode order.
  // With `snapshot_first`, also a read-only snapshot of the subvolume as it was with only
  // copy 0 (same inodes, same extents), scanned after it.
  void make_copies(int copies, int shared, bool snapshot_first = false) {
    shared_ = shared;
    if (snapshot_first) {
      btrfs::Subvolume snap = subvolume_below_top(kSnap, "snap");
      all_.front().uuid[0] = 1;
      snap.uuid[0] = 2;
      snap.parent_uuid[0] = 1;
      snap.readonly = true;
      all_.push_back(snap);
      snapshot_.emplace(source_, kSnap);
    }
    uint64_t ino = 257;
    for (int c = 0; c < copies; ++c) {
      const uint64_t dir = ino++;
      t_.dir(dir, BTRFS_FIRST_FREE_OBJECTID, "copy" + std::to_string(c));
      if (c == 0 && snapshot_) snapshot_->dir(dir, BTRFS_FIRST_FREE_OBJECTID, "copy0");
      for (int j = 0; j <= shared; ++j) {
        const uint64_t content = j < shared ? static_cast<uint64_t>(j) : 100000u + c;
        add_file(ino++, dir, "f" + std::to_string(j), content, sectors_of(j), c == 0);
      }
    }
  }
  uint64_t shared_bytes_per_copy() const {
    uint64_t bytes = 0;
    for (int j = 0; j < shared_; ++j) bytes += sectors_of(j) * kSector;
    return bytes;
  }
  uint64_t sectors_of(int j) const { return one_sector_ ? 1 : 2 + j % 3; }

  // one_run: the catalog of a run without --hashfile (CatalogSession::open_temporary).
  std::unique_ptr<CatalogSession> session(JobOptions& o, bool one_run = false) {
    auto catalog = Catalog::open_in_memory();
    EXPECT_TRUE(catalog.ok());
    if (one_run) {
      EXPECT_TRUE((*catalog)->use_for_one_run().ok());
    }
    auto s = CatalogSession::on(std::move(*catalog), o);
    EXPECT_TRUE(s.ok()) << s.error().message();
    (*s)->read_csums_from(&source_);
    return std::move(*s);
  }
  // The run's base from windowed_scan() over the in-memory tree.
  ScanResult start(CatalogSession& s) {
    ScanResult base;
    base.fs.sectorsize = kSector;
    base.fs.nodesize = 16384;
    base.fs.csum_size = 4;
    base.fs.csum_type = btrfs::CsumType::Crc32c;
    std::vector<SubvolumeRoot> roots{{kSub, kRoot}};
    if (snapshot_) roots.push_back({kSnap, kSnapRoot});
    auto scan = IncrementalScan::of_tree_source(source_, roots, all_, ScanOptions{}, base);
    auto started = s.windowed_scan(std::move(scan), std::move(base));
    EXPECT_TRUE(started.ok() && *started);
    return started.ok() && *started ? std::move(**started) : ScanResult{};
  }
  static JobOptions options(uint64_t window_files, bool dedupe = false) {
    JobOptions o;
    o.paths = {kRoot};
    o.window_files = window_files;
    o.io_threads = 1;
    o.dedupe = dedupe;
    return o;
  }
  // `-r` of the tree in windows of `window_files` files; `rows`: the catalog's after.
  FilesystemReport listing_run(uint64_t window_files, bool one_run = false,
                               uint64_t* rows = nullptr) {
    JobOptions o = options(window_files);
    auto s = session(o, one_run);
    FilesystemReport r;
    const RunContext run{o};
    WindowSource windows(*s, start(*s), run);
    run_batches(windows, run, r);
    EXPECT_EQ(r.error, "");
    if (rows) *rows = s->catalogued_files();
    return r;
  }

  // Calls `each` with every window after its fingerprint, and the session's roles then;
  // with `look_ahead`, after a first pass that indexed every window (a dedupe run's).
  void each_window(uint64_t window_files, bool look_ahead,
                   const std::function<void(const ScanResult&, const BatchRoles&)>& each) {
    JobOptions o = options(window_files, look_ahead);
    auto s = session(o, one_run_);
    const ScanResult base = start(*s);
    WindowTwins twins(s->window_reader());
    auto next = [&](ScanResult& window) {
      window = ScanResult{};
      window.roots = base.roots;
      window.fs = base.fs;
      window.subvolumes = base.subvolumes;
      auto more = s->next_window(window, window_files);
      EXPECT_TRUE(more.ok()) << more.error().message();
      return more.ok() && *more;
    };
    ScanResult window;
    if (look_ahead) {
      for (bool more = true; more;) {
        more = next(window);
        EXPECT_TRUE(s->index_window(window).ok());
      }
      s->rewind_windows();
      twins.look_ahead();
    }
    for (bool more = true; more;) {
      more = next(window);
      CatalogStats stats;
      auto fp = s->fingerprint_window(window, stats, twins, 1);
      EXPECT_TRUE(fp.ok()) << fp.error().message();
      each(window, s->roles());
      if (after_fingerprint_ && fp.ok()) after_fingerprint_(*s, window, *fp);
    }
  }
  // The roles of each window's files, as counts.
  std::vector<RoleCounts> roles_by_window(uint64_t window_files,
                                                           bool look_ahead) {
    std::vector<RoleCounts> out;
    each_window(window_files, look_ahead, [&](const ScanResult& window, const BatchRoles& roles) {
      auto& counts = out.emplace_back();
      for (uint32_t i = 0; i < window.files.size(); ++i) ++counts[roles.of(i)];
    });
    return out;
  }

  const MemoryTreeSource& source() const { return source_; }

  int shared_ = 0;
  bool one_run_ = false;     // each_window(): on the catalog of a run without --hashfile
  bool one_sector_ = false;  // make_copies(): every file one sector (proven by its bytes)
  // each_window(): also called with the session and the window's fingerprints.
  std::function<void(CatalogSession&, const ScanResult&, const FingerprintResult&)>
      after_fingerprint_;

 private:
  void add_file(uint64_t ino, uint64_t dir, const std::string& name, uint64_t content,
                uint64_t sectors, bool in_snapshot) {
    const uint64_t bytenr = (ino + 16) << 20;
    for (SyntheticTree* tree : {&t_, in_snapshot && snapshot_ ? &*snapshot_ : nullptr}) {
      if (!tree) continue;
      tree->file(ino, dir, name, sectors * kSector);
      tree->extent(ino, 0, sectors * kSector, bytenr);
    }
    std::vector<uint8_t> sums;
    for (uint64_t s = 0; s < sectors; ++s) {
      const uint32_t sum = sector_sum(content, s);
      for (int b = 0; b < 4; ++b) sums.push_back(static_cast<uint8_t>(sum >> (8 * b)));
    }
    source_.add(BTRFS_CSUM_TREE_OBJECTID,
                {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr}, std::move(sums));
  }

  MemoryTreeSource source_;
  SyntheticTree t_{source_, kSub};
  std::optional<SyntheticTree> snapshot_;
  std::vector<btrfs::Subvolume> all_;
};

// However the tree is cut into windows (a copy each, a few files each, all in one), a
// listing run finds each shared content's group once and plans every later copy of it, and
// counts each file once.
TEST_F(WindowedRunMemory, WindowsFindWhatOneWindowFinds) {
  make_copies(4, 10);
  const FilesystemReport one = listing_run(1000);
  EXPECT_EQ(one.windows, 1u);
  EXPECT_EQ(one.files, 4u * 11);
  EXPECT_EQ(one.whole_file_groups, 10u);
  EXPECT_EQ(one.planned_bytes, 3 * shared_bytes_per_copy());
  for (uint64_t window_files : {11u, 7u, 3u}) {
    SCOPED_TRACE("windows of " + std::to_string(window_files) + " files");
    const FilesystemReport r = listing_run(window_files);
    EXPECT_EQ(r.windows, (4u * 11 + window_files - 1) / window_files);
    EXPECT_EQ(r.files, one.files);
    EXPECT_EQ(r.whole_file_groups, one.whole_file_groups);
    EXPECT_EQ(r.partial_groups, one.partial_groups);
    EXPECT_EQ(r.planned_bytes, one.planned_bytes);
    EXPECT_EQ(r.would_free.bytes, one.would_free.bytes);
    EXPECT_EQ(r.before.logical_bytes, one.before.logical_bytes);
    EXPECT_EQ(r.before.unique_bytes, one.before.unique_bytes);
  }
}

// A run without --hashfile keeps, of a content's copies, only the two rows that later
// windows need (the source they take, and the sign that its group was held before):
// copies 2 and 3 of every shared file write none, and the figures stay those of one window.
TEST_F(WindowedRunMemory, AOneRunCatalogKeepsTwoRowsPerContentForTheSameFigures) {
  make_copies(4, 10);
  const FilesystemReport one = listing_run(1000);
  uint64_t kept = 0, scratch = 0;
  const FilesystemReport hashfile_rows = listing_run(11, false, &kept);
  const FilesystemReport r = listing_run(11, true, &scratch);
  EXPECT_EQ(kept, 4u * 11);
  EXPECT_EQ(scratch, 2u * 11 + 2);  // copies 0 and 1 whole, then each copy's own file
  for (const FilesystemReport* w : {&hashfile_rows, &r}) {
    EXPECT_EQ(w->windows, 4u);
    EXPECT_EQ(w->files, one.files);
    EXPECT_EQ(w->whole_file_groups, one.whole_file_groups);
    EXPECT_EQ(w->partial_groups, one.partial_groups);
    EXPECT_EQ(w->planned_bytes, one.planned_bytes);
    EXPECT_EQ(w->would_free.bytes, one.would_free.bytes);
    EXPECT_EQ(w->before.unique_bytes, one.before.unique_bytes);
  }
}

// Without a first pass, a window takes one earlier twin per whole-file hash: copy 1's
// window reads copy 0's files back, and so does every later copy's (their groups were
// counted in copy 1's window: grouped before).
TEST_F(WindowedRunMemory, AWindowTakesOneEarlierTwinPerContent) {
  make_copies(4, 10);
  for (bool one_run : {false, true}) {  // a run's own catalog keeps fewer rows, same roles
    SCOPED_TRACE(one_run ? "a run without --hashfile" : "a hashfile");
    one_run_ = one_run;
    const auto windows = roles_by_window(11, false);
    ASSERT_EQ(windows.size(), 4u);
    EXPECT_EQ(windows[0], (RoleCounts{{BatchRole::Own, 11}}));
    EXPECT_EQ(windows[1], (RoleCounts{{BatchRole::Own, 11}, {BatchRole::EarlierTwin, 10}}));
    for (size_t w : {2u, 3u})
      EXPECT_EQ(windows[w],
                (RoleCounts{{BatchRole::Own, 11}, {BatchRole::EarlierGroupedTwin, 10}}))
          << "window " << w;
  }
}

// A windowed run's reports, by what it keeps of earlier windows' files (VerifiedTwins).
class WindowedRunTwins : public WindowedRunMemory {
 protected:
  struct Run {
    FilesystemReport report;
    uint64_t searches = 0;
    size_t kept = 0;
  };
  // budget, as_read: WindowTwins::keep_verified_twins's (nullopt: its defaults).
  Run report_run(std::optional<size_t> budget, std::optional<size_t> as_read = {}) {
    JobOptions o = options(11);
    auto s = session(o, true);
    Run out;
    const uint64_t before = source().searches();
    const RunContext run{o};
    WindowSource windows(*s, start(*s), run);
    if (budget) windows.twins().keep_verified_twins(*budget, as_read);
    run_batches(windows, run, out.report);
    EXPECT_EQ(out.report.error, "");
    out.searches = source().searches() - before;
    out.kept = windows.twins().verified_twins_kept();
    return out;
  }
  void expect_figures_of(const FilesystemReport& one, const Run& r) {
    EXPECT_EQ(r.report.windows, 4u);
    EXPECT_EQ(r.report.files, one.files);
    EXPECT_EQ(r.report.whole_file_groups, one.whole_file_groups);
    EXPECT_EQ(r.report.planned_bytes, one.planned_bytes);
    EXPECT_EQ(r.report.planned_rounds, one.planned_rounds);
    EXPECT_EQ(r.report.would_free.bytes, one.would_free.bytes);
    EXPECT_EQ(r.report.before.unique_bytes, one.before.unique_bytes);
  }
};

// Copy 0's files, verified as twins by copy 1's window, are kept: copies 2 and 3's windows
// take them again without reading the tree, and the run's figures are those of a run that
// reads them each time (a budget of 0) and of one window. (No window's files kept as read.)
TEST_F(WindowedRunTwins, LaterWindowsTakeTheTwinsAnEarlierOneVerifiedWithoutReadingThemAgain) {
  make_copies(4, 10);
  const FilesystemReport one = listing_run(1000);
  const Run kept = report_run(kVerifiedTwinBytes, 0), read = report_run(0);
  EXPECT_EQ(kept.kept, 10u);
  EXPECT_EQ(read.kept, 0u);
  EXPECT_LT(kept.searches, read.searches);
  for (const Run* r : {&kept, &read}) expect_figures_of(one, *r);
}

// A report keeps each window's files as it reads them, with their sums: copy 1's window
// takes copy 0's files as twins without reading their tree or their sums again, so the
// run sums what one window does, and plans the same.
TEST_F(WindowedRunTwins, AReportKeepsAWindowsFilesAsReadAndSumsEachFileOnce) {
  make_copies(4, 10);
  const FilesystemReport one = listing_run(1000);
  const Run as_read = report_run(std::nullopt), verified = report_run(kVerifiedTwinBytes, 0);
  EXPECT_EQ(as_read.kept, 4u * 11);
  EXPECT_LT(as_read.searches, verified.searches);
  EXPECT_EQ(as_read.report.fingerprints.bytes_from_csums, one.fingerprints.bytes_from_csums);
  EXPECT_EQ(verified.report.fingerprints.bytes_from_csums,
            one.fingerprints.bytes_from_csums + shared_bytes_per_copy());
  for (const Run* r : {&as_read, &verified}) expect_figures_of(one, *r);
}

// What a report keeps as read stops at its share of the budget: past it, the twins a
// window verifies are kept as before. A share of one byte keeps copy 0's first file as
// read, with its sums; copy 1's window verifies and sums the other nine it takes.
TEST_F(WindowedRunTwins, FilesKeptAsReadStopAtTheirShareOfTheBudget) {
  make_copies(4, 10);
  const FilesystemReport one = listing_run(1000);
  const Run r = report_run(kVerifiedTwinBytes, 1);
  EXPECT_EQ(r.kept, 10u);
  EXPECT_EQ(r.report.fingerprints.bytes_from_csums,
            one.fingerprints.bytes_from_csums + shared_bytes_per_copy() -
                sectors_of(0) * kSector);
  expect_figures_of(one, r);
}

// With the first pass of a dedupe run, copy 0's window takes the later copies of its files
// as ahead twins (three per window file at most, fifteen per content), and their own
// windows find them settled: no earlier twin is read back.
TEST_F(WindowedRunMemory, TheLookAheadTakesLaterCopiesOnceAndSettlesThem) {
  make_copies(4, 10);
  const auto windows = roles_by_window(11, true);
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(windows[0], (RoleCounts{{BatchRole::Own, 11}, {BatchRole::AheadTwin, 30}}));
  for (size_t w : {1u, 2u, 3u})
    EXPECT_EQ(windows[w], (RoleCounts{{BatchRole::Own, 1}, {BatchRole::Settled, 10}}))
        << "window " << w;
}

// The look-ahead's bound: at most three ahead twins per file of the window. Of 8 copies,
// copy 0's window (11 files) takes 33 of the 70 later copies; the rest are read in their
// own windows, each taking the next copies ahead in turn.
TEST_F(WindowedRunMemory, AheadTwinsAreBoundedByTheWindowsFiles) {
  make_copies(8, 10);
  const auto windows = roles_by_window(11, true);
  ASSERT_EQ(windows.size(), 8u);
  EXPECT_EQ(windows[0].at(BatchRole::AheadTwin), 33u);
  size_t ahead = 0, settled = 0, earlier = 0;
  for (const auto& w : windows) {
    EXPECT_LE(count_of(w, BatchRole::AheadTwin), 3u * 11);
    ahead += count_of(w, BatchRole::AheadTwin);
    settled += count_of(w, BatchRole::Settled);
    earlier += count_of(w, BatchRole::EarlierTwin) + count_of(w, BatchRole::EarlierGroupedTwin);
  }
  EXPECT_EQ(ahead, settled);  // each file taken ahead is settled in its own window
  EXPECT_EQ(ahead + earlier + 10, 8u * 10);  // every later copy reaches a source once
}

// A read-only snapshot of the subvolume holding copy 0: its files fold into copy 0's (the
// same inodes map the same extents), and copy 0's files, kept in their window and read
// back as twins in later ones, each say they stand for the snapshot's copy, by the one
// rule both readers use (IncrementalScan::mark_readonly_aliases).
TEST_F(WindowedRunMemory, FilesAndTheirTwinsStandForTheirReadOnlySnapshotCopies) {
  make_copies(3, 10, /*snapshot_first=*/true);
  std::vector<size_t> own_aliases, twin_aliases, folded;
  each_window(11, false, [&](const ScanResult& window, const BatchRoles& roles) {
    size_t own = 0, twins = 0;
    for (uint32_t i = 0; i < window.files.size(); ++i) {
      const bool alias = window.files[i].readonly_alias;
      const auto& snaps = window.readonly_alias_subvolumes.subvolumes_of(i);
      EXPECT_EQ(alias, std::find(snaps.begin(), snaps.end(), kSnap) != snaps.end()) << i;
      if (!alias) continue;
      ++(roles.counted_before(i) ? twins : own);
    }
    own_aliases.push_back(own);
    twin_aliases.push_back(twins);
    folded.push_back(window.passed_over.readonly_aliases);
  });
  // Windows: copy 0, copy 1, copy 2 (each taking copy 0's files back as twins: the
  // first row of each content), then the snapshot's copy 0, all of it folded.
  EXPECT_EQ(own_aliases, (std::vector<size_t>{11, 0, 0, 0}));
  EXPECT_EQ(twin_aliases, (std::vector<size_t>{0, 10, 10, 0}));
  EXPECT_EQ(folded, (std::vector<size_t>{0, 0, 0, 11}));
}

}  // namespace
}  // namespace btrdedupe::test

namespace btrdedupe::test {
namespace {

// The "data hash" a proof would read of a file fJ of any copy: its content's.
uint64_t proven_hash(const ScanResult& window, uint32_t i) {
  const std::string path = file_path(window, window.files[i]);
  return 1000 + std::stoull(path.substr(path.rfind("/f") + 2));
}

// A one-sector file's data hash, once a proof read it, goes to its row
// (keep_short_hashes), and a later window that takes the file as a twin has it from there:
// each copy is read once by the proofs, not read again as every later window's twin.
TEST_F(WindowedRunMemory, AProvenDataHashComesBackWithTheTwinsRow) {
  one_sector_ = true;
  make_copies(3, 12);
  std::vector<size_t> twins_by_window, known_by_window;
  after_fingerprint_ = [&](CatalogSession& s, const ScanResult& window,
                           const FingerprintResult& fp) {
    const BatchRoles& roles = s.roles();
    size_t twins = 0;
    std::vector<std::pair<uint32_t, uint64_t>> read;
    for (uint32_t i = 0; i < window.files.size(); ++i) {
      if (roles.of(i) == BatchRole::Own) {
        EXPECT_FALSE(fp.short_hashes.count(i)) << "a window's own file is new to the catalog";
        read.emplace_back(i, proven_hash(window, i));
        continue;
      }
      ++twins;
      const auto known = fp.short_hashes.find(i);
      ASSERT_NE(known, fp.short_hashes.end()) << file_path(window, window.files[i]);
      EXPECT_EQ(known->second, proven_hash(window, i));
    }
    twins_by_window.push_back(twins);
    known_by_window.push_back(fp.short_hashes.size());
    EXPECT_TRUE(s.keep_short_hashes(window, read).ok());
  };
  roles_by_window(13, false);
  EXPECT_EQ(twins_by_window, (std::vector<size_t>{0, 12, 12}));
  EXPECT_EQ(known_by_window, twins_by_window);
}

}  // namespace
}  // namespace btrdedupe::test
