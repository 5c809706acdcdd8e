// The hashfile: incremental re-runs, replay, locking, and files it must refuse.
#include <gtest/gtest.h>

#include <atomic>

#include "src/catalog/catalog.h"
#include "src/run/job.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

class CatalogTest : public BtrfsTest {
 protected:
  void SetUp() override {
    BtrfsTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    hashfile_ = fs().image_file() + ".hash";  // outside the filesystem being deduped
    sh("cd " + shell_quote(path("")) +
       " && mkdir tree && for i in 1 2 3 4 5 6; do head -c $((i * 70000)) /dev/urandom"
       " > tree/f$i; done && cp --reflink=never tree/f3 tree/f3-copy && sync");
  }
  void TearDown() override {
    run_command("rm -f " + shell_quote(hashfile_) + "*");
    BtrfsTest::TearDown();
  }

  JobReport run(bool dedupe = true, std::vector<std::string> paths = {"tree"}) {
    JobOptions o;
    for (const auto& p : paths) o.paths.push_back(path(p));
    o.recursive = true;
    o.dedupe = dedupe;
    o.hashfile = hashfile_;
    auto r = run_job(o);
    EXPECT_TRUE(r.path_errors.empty()) << (r.path_errors.empty() ? "" : r.path_errors[0]);
    return r;
  }
  // The hashfile's answer to SQL `statements` (no single quotes in them).
  std::string sql(const std::string& statements) {
    return sh("sqlite3 " + shell_quote(hashfile_) + " '" + statements + "'");
  }
  const FilesystemReport& fs0(const JobReport& r) {
    static const FilesystemReport none;
    EXPECT_EQ(r.filesystems.size(), 1u);
    return r.filesystems.empty() ? none : r.filesystems[0];
  }

  std::string hashfile_;
};

TEST_F(CatalogTest, UnchangedTreeIsNotReadAgain) {
  auto first = run();
  EXPECT_EQ(fs0(first).dedupe.bytes_deduped, 210000u);
  EXPECT_EQ(fs0(first).catalog.files_changed, 7u);
  auto second = run();
  EXPECT_TRUE(fs0(second).catalog.unchanged);
  EXPECT_EQ(fs0(second).tree_items, 0u);
  EXPECT_EQ(fs0(second).dedupe.calls, 0u);
  EXPECT_EQ(second.exit_code(), 0);
}

// A report-only run records what it found, but its duplicates still wait for a dedupe:
// the next -d run must not take the tree for done because nothing changed since.
TEST_F(CatalogTest, DedupeAfterAReportOnlyRunDedupesWhatTheReportFound) {
  auto report = run(/*dedupe=*/false);
  EXPECT_EQ(fs0(report).planned_bytes, 210000u);
  EXPECT_EQ(fs0(report).dedupe.bytes_deduped, 0u);
  auto r = run();
  EXPECT_FALSE(fs0(r).catalog.unchanged);
  EXPECT_FALSE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).dedupe.bytes_deduped, 210000u);
  EXPECT_EQ(r.exit_code(), 0);
  auto again = run();  // that dedupe was complete: now nothing is left
  EXPECT_TRUE(fs0(again).catalog.unchanged);
  EXPECT_EQ(fs0(again).dedupe.calls, 0u);
}

// A run stopped before its dedupe (SIGINT/SIGTERM) leaves its duplicates to the next run,
// also when the only change since is a new copy (the incremental path).
TEST_F(CatalogTest, RunStoppedBeforeItsDedupeLeavesTheRestToTheNextRun) {
  std::atomic<bool> stop{true};
  JobOptions o;
  o.paths = {path("tree")};
  o.recursive = o.dedupe = true;
  o.hashfile = hashfile_;
  o.stop = &stop;
  auto stopped = run_job(o);
  ASSERT_EQ(stopped.filesystems.size(), 1u);
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(stopped.filesystems[0].dedupe.bytes_deduped, 0u);
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/f5 tree/f5-late && sync");
  auto r = run();
  EXPECT_FALSE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).dedupe.bytes_deduped, 210000u + 350000u);  // f3's copy and f5's
  EXPECT_TRUE(fs0(run()).catalog.unchanged);
}

TEST_F(CatalogTest, NewCopyIsMatchedAgainstCataloguedFilesOnly) {
  run();
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/f5 tree/f5-late && sync");
  auto r = run();
  const auto& f = fs0(r);
  EXPECT_FALSE(f.catalog.unchanged);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.files, 2u);                  // the run's scan: the new file and its twin
  EXPECT_EQ(f.catalog.files_changed, 1u);  // only the new file was fingerprinted ...
  EXPECT_EQ(f.catalog.candidates, 1u);     // ... and f5, its twin found through the catalog
  EXPECT_EQ(f.catalog.files_known, 7u);
  EXPECT_EQ(f.dedupe.bytes_deduped, 350000u);
  EXPECT_TRUE(fs0(run()).catalog.unchanged);
}

TEST_F(CatalogTest, ModifiedDeletedAndRenamedFiles) {
  run();
  sh("cd " + shell_quote(path("")) +
     " && printf 'x' >> tree/f1 && rm tree/f2 && mv tree/f4 tree/f4-renamed && sync");
  auto r = run();
  const auto& f = fs0(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);  // f1 grew; a rename changes no content
  EXPECT_EQ(f.catalog.stale_rows, 1u);     // f2, found through its directory
  EXPECT_EQ(f.dedupe.calls, 0u);
  EXPECT_EQ(r.exit_code(), 0);
  auto c = Catalog::open(hashfile_);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ((*c)->files().size(), 6u);  // f2's row is gone
}

TEST_F(CatalogTest, NewAndDeletedSnapshots) {
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume create tree/vol"
     " && head -c 100000 /dev/urandom > tree/vol/g && sync");
  run();
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume snapshot -r tree/vol tree/snap && sync");
  auto r = run();
  EXPECT_FALSE(fs0(r).catalog.unchanged);
  EXPECT_EQ(fs0(r).catalog.files_changed, 0u);  // the snapshot's file folds into vol/g
  EXPECT_EQ(fs0(r).subvolumes, 3u);
  EXPECT_FALSE(fs0(r).catalog.incremental);  // a subvolume never scanned: read whole
  // A change and a deleted snapshot: incremental again.
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/vol/g tree/vol/g2 && "
     "btrfs -q subvolume delete tree/snap && sync");
  r = run();
  EXPECT_FALSE(fs0(r).catalog.unchanged);
  EXPECT_TRUE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).subvolumes, 2u);
  EXPECT_EQ(fs0(r).catalog.files_changed, 1u);  // g2; g is its twin
  EXPECT_EQ(fs0(r).catalog.candidates, 1u);
  EXPECT_EQ(fs0(r).dedupe.bytes_deduped, 100000u);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_TRUE(fs0(run()).catalog.unchanged);
}

TEST_F(CatalogTest, CandidateHeldByAReadOnlySnapshotStaysTheSource) {
  sh("cd " + shell_quote(path("")) + " && btrfs -q subvolume create tree/vol"
     " && head -c 100000 /dev/urandom > tree/vol/g && btrfs -q subvolume snapshot -r tree/vol"
     " tree/snap && sync");
  run();
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/vol/g tree/vol/g2 && sync");
  JobOptions o;
  o.paths = {path("tree")};
  o.recursive = o.dedupe = o.list_groups = true;
  o.hashfile = hashfile_;
  auto r = run_job(o);
  const auto& f = fs0(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.dedupe.bytes_deduped, 100000u);
  auto groups = f.groups.read_all();
  ASSERT_TRUE(groups) << groups.error().message();
  ASSERT_EQ(groups->size(), 1u);
  for (const auto& m : (*groups)[0].members) {
    const bool is_g = m.path == path("tree/vol/g");
    EXPECT_EQ(m.source, is_g) << m.path;  // its extent stays: the snapshot holds it anyway
    EXPECT_EQ(m.destination, !is_g) << m.path;
  }
}

TEST_F(CatalogTest, AtimeOnlyChangesAreNotLookedUp) {
  run();
  // As if the files had been written an hour before the last run; then every file and the
  // directory are read, which on a relatime mount rewrites their inodes (atime) only.
  sql("UPDATE runs SET started = started + 3600;");
  sh("cd " + shell_quote(path("")) + " && ls tree > /dev/null && cat tree/* > /dev/null && sync");
  auto r = run();
  const auto& f = fs0(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 0u);
  EXPECT_EQ(f.catalog.stale_rows, 0u);
  EXPECT_LE(f.tree_searches, 3u);  // the min_transid search only: no inode read one by one
  // A deletion after the last run began shows: the directory's ctime is newer.
  sql("UPDATE runs SET started = finished - 1;");
  sh("cd " + shell_quote(path("")) + " && rm tree/f2 && sync");
  r = run();
  EXPECT_EQ(fs0(r).catalog.stale_rows, 1u);
}

TEST_F(CatalogTest, FilesOfADeletedDirectoryNeverServeAsSources) {
  sh("cd " + shell_quote(path("")) + " && mkdir tree/sub && head -c 90000 /dev/urandom"
     " > tree/sub/g && sync");
  run();
  // The directory goes, and a copy of g is made first: the catalog's row of g is the
  // copy's only twin, and it is stale.
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/sub/g tree/g-copy && "
     "rm -r tree/sub && sync");
  auto r = run();
  const auto& f = fs0(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);
  EXPECT_EQ(f.catalog.candidates, 0u);   // g's row was read from the tree first: gone
  EXPECT_EQ(f.catalog.stale_rows, 1u);
  EXPECT_EQ(f.dedupe.calls, 0u);
  EXPECT_EQ(r.exit_code(), 0);
  auto c = Catalog::open(hashfile_);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ((*c)->files().size(), 8u);  // the 7 of the tree and g-copy; g's row is gone
}

TEST_F(CatalogTest, MovedFileKeepsItsRowAndLosesItWhenDeletedLater) {
  sh("cd " + shell_quote(path("")) + " && mkdir tree/sub && sync");
  run();
  sh("cd " + shell_quote(path("")) + " && mv tree/f4 tree/sub/f4 && sync");
  auto r = run();
  EXPECT_TRUE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).catalog.files_changed, 0u);  // a rename changes no content
  EXPECT_EQ(fs0(r).catalog.stale_rows, 0u);
  // Deleted from the directory it was moved to: found there.
  sh("cd " + shell_quote(path("")) + " && rm tree/sub/f4 && sync");
  r = run();
  EXPECT_TRUE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).catalog.stale_rows, 1u);
  auto c = Catalog::open(hashfile_);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ((*c)->files().size(), 6u);
}

TEST_F(CatalogTest, RewrittenFileIsFingerprintedAgainAndDedupedAgainstItsTwin) {
  run();
  // f3 rewritten in place with f6's bytes (dd: cat would reflink them); now twins.
  sh("cd " + shell_quote(path("")) + " && dd status=none bs=64K if=tree/f6 of=tree/f3 && sync");
  auto r = run();
  const auto& f = fs0(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);
  EXPECT_EQ(f.catalog.candidates, 1u);
  EXPECT_EQ(f.dedupe.bytes_deduped, 420000u);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_TRUE(fs0(run()).catalog.unchanged);
}

// Back to the format an older btrdedupe left: format 3 lacked the proven data hashes of
// one-sector files; format 2 held 128 KiB-aligned block hashes where format 3 holds
// anchors; format 1 also lacked the files' directories.
std::string downgrade_sql(int format) {
  std::string sql = "ALTER TABLE files DROP COLUMN short_hash; ";
  if (format == 3) return sql + "PRAGMA user_version=3;";
  sql +=
      "DROP TABLE anchors; CREATE TABLE blocks(hash INTEGER NOT NULL, subvolume INTEGER NOT "
      "NULL, inode INTEGER NOT NULL, block INTEGER NOT NULL, PRIMARY KEY(hash, subvolume, "
      "inode, block)) WITHOUT ROWID; CREATE INDEX blocks_by_file ON blocks(subvolume, inode); "
      "INSERT INTO blocks SELECT whole_hash, subvolume, inode, 0 FROM files "
      "WHERE whole_hash IS NOT NULL AND size >= 131072; ";
  if (format == 1) sql += "DROP INDEX files_by_parent; ALTER TABLE files DROP COLUMN parent; ";
  return sql + "PRAGMA user_version=" + std::to_string(format) + ";";
}

// A catalog of an older format, with a copy made since: the run upgrades it, writes every
// row afresh from a whole read of the trees, and dedupes the copy.
class CatalogUpgradeTest : public CatalogTest {
 protected:
  JobReport upgraded_run(int format) {
    run();
    sql(downgrade_sql(format));
    sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/f2 tree/f2-late && sync");
    auto r = run();
    EXPECT_EQ(fs0(r).catalog.upgraded_from, std::optional<int>(format));
    EXPECT_FALSE(fs0(r).catalog.incremental);
    EXPECT_EQ(fs0(r).catalog.files_changed, 8u);  // every row written afresh
    EXPECT_EQ(fs0(r).dedupe.bytes_deduped, 140000u);
    return r;
  }
};

TEST_F(CatalogUpgradeTest, FormatTwoIsUpgradedAndItsNextRunReadsTheTreesWhole) {
  upgraded_run(2);
  // f2 to f6, f3-copy and f2-late are 128 KiB or more: each has anchor rows.
  EXPECT_EQ(sql("PRAGMA user_version; "
                "SELECT count(*) FROM sqlite_master WHERE name LIKE \"blocks%\"; "
                "SELECT count(DISTINCT inode) FROM anchors;"),
            "4\n0\n7\n");
  const auto r = run();
  EXPECT_FALSE(fs0(r).catalog.upgraded_from);
  EXPECT_TRUE(fs0(r).catalog.unchanged);
}

TEST_F(CatalogUpgradeTest, FormatOneIsUpgradedAndItsNextRunReadsTheTreesWhole) {
  upgraded_run(1);
  EXPECT_EQ(sql("PRAGMA user_version; SELECT count(*) FROM files WHERE parent IS NULL;"),
            "4\n0\n");
  sh("cd " + shell_quote(path("")) + " && rm tree/f1 && sync");
  const auto r = run();
  EXPECT_TRUE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).catalog.stale_rows, 1u);
}

// Format 3 gains only a column: its rows and generations stay, so the next run finds
// nothing changed, and a copy made since is found by an incremental run.
TEST_F(CatalogUpgradeTest, FormatThreeKeepsItsRowsAndGenerations) {
  run();
  sql(downgrade_sql(3));
  EXPECT_TRUE(fs0(run()).catalog.unchanged);
  EXPECT_EQ(sql("PRAGMA user_version; SELECT count(*) FROM files WHERE short_hash IS NULL;"),
            "4\n7\n");
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/f2 tree/f2-late && sync");
  const auto r = run();
  EXPECT_TRUE(fs0(r).catalog.incremental);
  EXPECT_EQ(fs0(r).dedupe.bytes_deduped, 140000u);
}

// A one-sector file is proven a duplicate by its bytes, and the data hash that proof read
// stays in its row: a later run that finds a new copy takes the catalogued twin's hash
// from there instead of reading the twin. A row made to hold another hash shows that it
// is taken (the new copy then matches nothing); a twin touched since is read again.
TEST_F(CatalogTest, AOneSectorTwinsProvenDataHashComesFromItsRow) {
  const std::string dir = "cd " + shell_quote(path("")) + " && ";
  sh(dir + "head -c 3000 /dev/urandom > tree/s1 && cp --reflink=never tree/s1 tree/s2 && sync");
  const auto first = run();
  EXPECT_EQ(fs0(first).whole_file_groups, 2u);
  EXPECT_EQ(sql("SELECT count(*) FROM files WHERE short_hash IS NOT NULL;"), "2\n");
  EXPECT_EQ(fs0(first).short_file_proofs.files_read, 2u);
  EXPECT_EQ(fs0(first).short_file_proofs.bytes_read, 6000u);
  EXPECT_EQ(fs0(first).short_file_proofs.files_known, 0u);

  sql("UPDATE files SET short_hash = 1 WHERE short_hash IS NOT NULL;");
  sh(dir + "cp --reflink=never tree/s1 tree/s3 && sync");
  const auto planted = run();
  EXPECT_TRUE(fs0(planted).catalog.incremental);
  EXPECT_EQ(fs0(planted).catalog.candidates, 2u);  // s1 and s2, by their whole-file hash
  EXPECT_EQ(fs0(planted).whole_file_groups, 0u);
  EXPECT_EQ(fs0(planted).dedupe.bytes_deduped, 0u);
  EXPECT_EQ(fs0(planted).short_file_proofs.files_read, 1u);  // s3 only
  EXPECT_EQ(fs0(planted).short_file_proofs.bytes_read, 3000u);
  EXPECT_EQ(fs0(planted).short_file_proofs.files_known, 2u);
  // s3's own hash, as read, went to its new row.
  EXPECT_EQ(sql("SELECT count(*) FROM files WHERE short_hash IS NOT NULL AND short_hash != 1;"),
            "1\n");

  sh(dir + "touch -d '1 minute ago' tree/s1 tree/s2 && sync");
  const auto touched = run();
  EXPECT_TRUE(fs0(touched).catalog.incremental);
  EXPECT_EQ(fs0(touched).whole_file_groups, 1u);
  EXPECT_GT(fs0(touched).dedupe.bytes_deduped, 0u);
  EXPECT_EQ(fs0(touched).short_file_proofs.files_read, 2u);  // s1 and s2 changed: read again
  EXPECT_EQ(fs0(touched).short_file_proofs.files_known, 1u);
  EXPECT_EQ(sql("SELECT count(DISTINCT short_hash) FROM files WHERE short_hash IS NOT NULL;"),
            "1\n");

  // A run that reads its trees whole (a new subvolume) takes its unchanged twins' hashes
  // from their rows too.
  sql("UPDATE files SET short_hash = 1 WHERE short_hash IS NOT NULL;");
  sh(dir + "btrfs -q subvolume create tree/vol && cp --reflink=never tree/s1 tree/vol/s4 && sync");
  const auto whole = run();
  EXPECT_FALSE(fs0(whole).catalog.incremental);
  EXPECT_EQ(fs0(whole).catalog.files_changed, 1u);
  EXPECT_EQ(fs0(whole).catalog.candidates, 3u);
  EXPECT_EQ(fs0(whole).dedupe.bytes_deduped, 0u);
}

// The catalog indexes anchors, not aligned blocks: a copy shifted by 68 KiB (no multiple
// of 128 KiB) finds its catalogued twin in an incremental run, and the old extent is freed.
TEST_F(CatalogTest, AShiftedCopyFindsItsCataloguedTwin) {
  sh("cd " + shell_quote(path("")) + " && head -c 2M /dev/urandom > tree/image && sync");
  run();
  sh("cd " + shell_quote(path("")) + " && (head -c 69632 /dev/urandom; cat tree/image) |"
     " dd status=none bs=1M iflag=fullblock oflag=direct of=tree/shifted && sync");
  auto r = run();
  const auto& f = fs0(r);
  EXPECT_TRUE(f.catalog.incremental);
  EXPECT_EQ(f.catalog.files_changed, 1u);
  EXPECT_EQ(f.catalog.candidates, 1u);
  EXPECT_EQ(f.dedupe.bytes_deduped, 2u << 20);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST_F(CatalogTest, ReplayRepeatsTheStoredRootsAndMode) {
  run(true);
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/f6 tree/f6-late && sync");
  JobOptions o;
  o.hashfile = hashfile_;  // no paths: a replay
  auto r = run_job(o);
  ASSERT_TRUE(r.path_errors.empty()) << r.path_errors[0];
  EXPECT_TRUE(fs0(r).catalog.incremental);
  EXPECT_EQ(r.options.paths, std::vector<std::string>{path("tree")});
  EXPECT_TRUE(r.options.recursive);
  EXPECT_TRUE(r.options.dedupe);
  EXPECT_EQ(fs0(r).dedupe.bytes_deduped, 420000u);
}

TEST_F(CatalogTest, SecondRunOnTheSameHashfileFailsAtOnce) {
  auto held = Catalog::open(hashfile_);
  ASSERT_TRUE(held.ok());
  JobOptions o;
  o.paths = {path("tree")};
  o.hashfile = hashfile_;
  auto r = run_job(o);
  ASSERT_EQ(r.path_errors.size(), 1u);
  EXPECT_EQ(r.path_errors[0], "hashfile " + hashfile_ + " is in use by another btrdedupe run: "
                                                        "Device or resource busy");
  EXPECT_EQ(r.exit_code(), 1);
}

TEST_F(CatalogTest, RefusesAndKeepsForeignFiles) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"garbage", "head -c 10000 /dev/urandom > F"},
      {"another program's database", "sqlite3 F 'CREATE TABLE notes(x); INSERT INTO notes VALUES(1);'"},
      {"truncated hashfile", ""},
  };
  run();  // a real catalog, truncated below
  for (const auto& [what, make] : cases) {
    const std::string f = hashfile_ + ".case";
    if (make.empty())
      sh("head -c 3000 " + shell_quote(hashfile_) + " > " + shell_quote(f));
    else
      sh("rm -f " + shell_quote(f) + " && " +
         std::string(make).replace(make.find('F'), 1, shell_quote(f)));
    const auto before = sh("sha256sum < " + shell_quote(f));
    JobOptions o;
    o.paths = {path("tree")};
    o.hashfile = f;
    auto r = run_job(o);
    ASSERT_EQ(r.path_errors.size(), 1u) << what;
    EXPECT_NE(r.path_errors[0].find(f), std::string::npos) << what << ": " << r.path_errors[0];
    EXPECT_EQ(sh("sha256sum < " + shell_quote(f)), before) << what;
    run_command("rm -f " + shell_quote(f) + "*");
  }
}

TEST_F(CatalogTest, DuperemoveCronLineWorksUnchanged) {
  // What a cron job written for duperemove runs, with btrdedupe in its place.
  const std::string cmd = std::string(BTRDEDUPE_BINARY) + " -dr --hashfile=" +
                          shell_quote(hashfile_) + " " + shell_quote(path("tree"));
  auto first = run_command(cmd);
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("Comparison of extent info shows a net change in shared extents of: "
                              "425984\n"),  // f3 and f3-copy, block-rounded
            std::string::npos)
      << first.output;
  auto second = run_command(cmd);
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("Nothing changed since the last run recorded in"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("net change in shared extents of: 0\n"), std::string::npos);
  // Replay: the hashfile alone repeats the roots and -dr.
  sh("cd " + shell_quote(path("")) + " && cp --reflink=never tree/f1 tree/f1-late && sync");
  auto replay = run_command(std::string(BTRDEDUPE_BINARY) + " --hashfile=" + shell_quote(hashfile_));
  EXPECT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_NE(replay.output.find("net change in shared extents of: 147456\n"), std::string::npos)
      << replay.output;
}

TEST_F(CatalogTest, ListStatsHistoryAndRemove) {
  const std::string bin = std::string(BTRDEDUPE_BINARY) + " --hashfile=" + shell_quote(hashfile_);
  run();
  auto list = run_command(bin + " -L");
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("  root: " + path("tree") + "\n"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("  files: 7 ("), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("  runs: 1, last "), std::string::npos) << list.output;

  auto stats = run_command(bin + " --stats");
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("Identical files: 1 groups; 1 files are copies of another, 210000"),
            std::string::npos)
      << stats.output;

  auto history = run_command(bin + " --history");
  EXPECT_EQ(history.exit_code, 0) << history.output;
  EXPECT_NE(history.output.find("deduped 210000  " + path("tree")), std::string::npos)
      << history.output;

  auto removed = run_command(bin + " -R " + shell_quote(path("tree/f1")));
  EXPECT_EQ(removed.exit_code, 0) << removed.output;
  EXPECT_NE(removed.output.find("Removed 1 files from"), std::string::npos) << removed.output;
  EXPECT_NE(run_command(bin + " -L").output.find("  files: 6 ("), std::string::npos);
  // The next run reads the tree again and puts f1 back.
  auto again = run();
  EXPECT_FALSE(fs0(again).catalog.unchanged);
  EXPECT_EQ(fs0(again).catalog.files_changed, 1u);

  for (const char* bad : {" -L -R /x", " -R", " -L /x"}) {
    auto r = run_command(bin + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
  }
  EXPECT_EQ(run_command(std::string(BTRDEDUPE_BINARY) + " -L").exit_code, 2);
}

TEST_F(CatalogTest, OtherExcludePatternsAreAnotherScope) {
  const std::string bin = std::string(BTRDEDUPE_BINARY) + " -dr --hashfile=" + shell_quote(hashfile_);
  auto first = run_command(bin + " --exclude 'f3*' " + shell_quote(path("tree")));
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("net change in shared extents of: 0\n"), std::string::npos)
      << first.output;  // the only duplicate pair was left out
  auto same = run_command(bin + " --exclude 'f3*' " + shell_quote(path("tree")));
  EXPECT_NE(same.output.find("Nothing changed since the last run"), std::string::npos) << same.output;
  auto replay = run_command(std::string(BTRDEDUPE_BINARY) + " --hashfile=" + shell_quote(hashfile_));
  EXPECT_EQ(replay.exit_code, 1) << replay.output;
  EXPECT_NE(replay.output.find("was made by a run with --exclude"), std::string::npos)
      << replay.output;
  // Without the pattern the pair is in scope again: not "nothing changed".
  auto without = run_command(bin + " " + shell_quote(path("tree")));
  EXPECT_EQ(without.exit_code, 0) << without.output;
  EXPECT_NE(without.output.find("net change in shared extents of: 425984\n"), std::string::npos)
      << without.output;
}

class CatalogOtherFs : public CatalogTest {};

TEST_F(CatalogOtherFs, HashfileOfAnotherFilesystemIsRefused) {
  run();
  std::string why;
  auto other = BtrfsImage::create({}, &why);
  ASSERT_TRUE(other) << why;
  sh("head -c 100000 /dev/urandom > " + shell_quote(other->path("x")));
  const auto before = sh("sha256sum < " + shell_quote(hashfile_));
  JobOptions o;
  o.paths = {other->path("")};
  o.hashfile = hashfile_;
  auto r = run_job(o);
  ASSERT_EQ(r.path_errors.size(), 1u);
  EXPECT_NE(r.path_errors[0].find("belongs to filesystem"), std::string::npos) << r.path_errors[0];
  EXPECT_EQ(sh("sha256sum < " + shell_quote(hashfile_)), before);
}

}  // namespace
}  // namespace btrdedupe::test
