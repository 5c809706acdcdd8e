// Runs read in windows of files (-B, or a tree larger than a whole run may hold): each
// window is matched against the files of earlier windows through a catalog, so what is
// deduped, what the report says and what the hashfile holds must be what a whole run gives.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "src/catalog/catalog.h"
#include "src/run/job.h"
#include "src/report/json_report.h"
#include "src/report/run_totals.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

class WindowedRunTest : public CliTest {
 protected:
  void SetUp() override {
    BtrfsTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // 3 copies of 12 files in 3 directories, a file that shares its first half with
    // another (a partial match across windows), a file moved into a directory created
    // after it (its parent has a higher inode number), a tail that is not block aligned.
    sh("cd " + shell_quote(path("")) +
       " && mkdir -p tree/c1 && cd tree/c1 && for d in 1 2 3; do mkdir d$d; for f in 1 2 3 4;"
       " do head -c $(( (d * 4 + f) * 9000 + 1234 )) /dev/urandom > d$d/f$f; done; done"
       " && head -c 524288 /dev/urandom > half && head -c 262144 half > ../partial"
       " && head -c 262144 /dev/urandom >> ../partial"
       " && cd .. && cp -r --reflink=never c1 c2 && cp -r --reflink=never c1 c3"
       " && mkdir late && mv c2/d1/f1 late/moved && sync");
    // One extent per file, whatever another test's sync split while they were written: the
    // plan's choice of a group's source follows the layout, and the whole and windowed runs
    // must see the same one (defragment rewrites a split file as one extent).
    sh("btrfs filesystem defragment -r -t 32M " + shell_quote(path("tree")) + " && sync");
    // Regular files with data: 13 per copy, and the partial one.
    files_ = 3 * 13 + 1;
    sh("cd " + shell_quote(path("tree")) +
       " && find . -type f -exec md5sum {} + | sort -k2 > ../sums.before"
       " && find . -type f -exec stat -c '%n %Y' {} + | sort > ../mtimes.before");
  }
  void TearDown() override {
    if (!hashfile_.empty()) run_command("rm -f " + shell_quote(hashfile_) + "*");
    BtrfsTest::TearDown();
  }

  JobOptions options(bool dedupe) {
    JobOptions o;
    o.paths = {path("tree")};
    o.recursive = true;
    o.dedupe = dedupe;
    return o;
  }
  JobReport run(const JobOptions& o) {
    auto r = run_job(o);
    EXPECT_TRUE(r.path_errors.empty()) << (r.path_errors.empty() ? "" : r.path_errors[0]);
    EXPECT_EQ(r.filesystems.size(), 1u);
    if (!r.filesystems.empty()) {
      EXPECT_EQ(r.filesystems[0].error, "");
    }
    return r;
  }
  // Options of a windowed run (7 files a window) on a hashfile beside the image.
  JobOptions windowed_on_hashfile(bool dedupe) {
    hashfile_ = fs().image_file() + ".hash";
    auto o = options(dedupe);
    o.hashfile = hashfile_;
    o.window_files = 7;
    return o;
  }
  // The hashfile holds a row for every file with data, and no pending duplicates.
  void expect_every_file_catalogued() {
    auto catalog = Catalog::open(hashfile_);
    ASSERT_TRUE(catalog) << catalog.error().message();
    EXPECT_EQ((*catalog)->counts().files, files_);
    EXPECT_FALSE((*catalog)->pending());
  }
  void expect_content_and_mtimes_unchanged() {
    sh("cd " + shell_quote(path("tree")) +
       " && find . -type f -exec md5sum {} + | sort -k2 | cmp - ../sums.before"
       " && find . -type f -exec stat -c '%n %Y' {} + | sort | cmp - ../mtimes.before");
  }

  // A whole report-only run, the tree deduped in windows of 5 files, and a whole run
  // after it; checks what any windowed run must match of the whole runs.
  struct Runs {
    JobReport whole, windowed, after;
  };
  Runs compare_with_whole_runs() {
    Runs runs{run(options(false)), {}, {}};
    auto o = options(true);
    o.window_files = 5;
    runs.windowed = run(o);
    expect_content_and_mtimes_unchanged();
    runs.after = run(options(false));
    [&] {
      ASSERT_FALSE(runs.whole.filesystems.empty());
      ASSERT_FALSE(runs.windowed.filesystems.empty());
      ASSERT_FALSE(runs.after.filesystems.empty());
    }();
    if (HasFatalFailure()) return runs;
    const auto& w = runs.whole.filesystems[0];
    const auto& r = runs.windowed.filesystems[0];
    const auto& a = runs.after.filesystems[0];
    EXPECT_GT(w.planned_bytes, 0u);
    EXPECT_EQ(r.before.logical_bytes, w.before.logical_bytes);
    EXPECT_EQ(runs.windowed.exit_code(), 0);
    // Nothing is left for a whole run, which sees what the windowed run reported.
    EXPECT_EQ(a.planned_bytes, 0u);
    EXPECT_EQ(a.before.unique_bytes, r.after.unique_bytes);
    // duperemove's figure too: summed over windows, what the whole tree shows now.
    EXPECT_EQ(runs.windowed.duperemove_net_change(),
              static_cast<int64_t>(a.before.in_shared_extents - w.before.in_shared_extents));
    return runs;
  }

  // A report-only run with options `o`, read whole and then in windows of `window_files`
  // files; both must plan, and say they would free, the same.
  struct WholeAndWindowed {
    JobReport whole, windowed;
  };
  WholeAndWindowed report_whole_and_in_windows(JobOptions o, uint64_t window_files) {
    o.dedupe = false;
    WholeAndWindowed runs{run(o), {}};
    o.window_files = window_files;
    runs.windowed = run(o);
    if (!runs.whole.filesystems.empty() && !runs.windowed.filesystems.empty()) {
      const auto& w = runs.whole.filesystems[0];
      const auto& r = runs.windowed.filesystems[0];
      EXPECT_EQ(r.planned_bytes, w.planned_bytes);
      EXPECT_EQ(r.would_free.bytes, w.would_free.bytes);
    }
    return runs;
  }
  // `o` deduped in windows of one file: it frees what `whole` (a whole report of the same
  // paths) said it would, as btrfs filesystem df shows, and a whole run after it plans
  // nothing. Returns the dedupe's report.
  JobReport dedupe_in_windows_of_one(JobOptions o, const FilesystemReport& whole) {
    o.window_files = 1;
    o.dedupe = true;
    const uint64_t used_before = data_used();
    const auto deduped = run(o);
    if (deduped.filesystems.empty()) return deduped;
    const auto& d = deduped.filesystems[0];
    EXPECT_GT(whole.would_free.bytes, 0u);
    EXPECT_EQ(d.freed.bytes, whole.would_free.bytes);
    EXPECT_EQ(used_before - data_used(), d.freed.bytes);
    o.dedupe = false;
    o.window_files = 0;
    const auto after = run(o);
    if (!after.filesystems.empty()) {
      EXPECT_EQ(after.filesystems[0].planned_bytes, 0u);
    }
    return deduped;
  }
  // The member paths of each whole-file group listed, each group's sorted.
  static std::multiset<std::vector<std::string>> whole_file_members(const GroupListings& l) {
    std::multiset<std::vector<std::string>> out;
    const auto read = l.for_each([&](const GroupListing& g) {
      if (!g.whole_file) return;
      std::vector<std::string> paths;
      for (const auto& m : g.members) paths.push_back(m.path);
      std::sort(paths.begin(), paths.end());
      out.insert(paths);
    });
    EXPECT_TRUE(read) << read.error().message();
    return out;
  }
  uint64_t files_ = 0;
  std::string hashfile_;
};

TEST_F(WindowedRunTest, DedupesAcrossWindowsWhatAWholeRunWould) {
  const auto runs = compare_with_whole_runs();
  if (HasFatalFailure()) return;
  const auto& w = runs.whole.filesystems[0];
  const auto& r = runs.windowed.filesystems[0];
  const auto& a = runs.after.filesystems[0];
  EXPECT_EQ(w.windows, 0u);
  EXPECT_GT(w.partial_groups, 0u);
  EXPECT_EQ(r.windows, (files_ + 4) / 5);
  EXPECT_EQ(r.files, files_);
  EXPECT_EQ(r.whole_file_groups, w.whole_file_groups);
  EXPECT_GT(r.partial_groups, 0u);
  EXPECT_EQ(r.before.shared_bytes, w.before.shared_bytes);
  EXPECT_EQ(r.dedupe.ranges_differ + r.dedupe.ranges_changed + r.dedupe.ranges_failed, 0u);
  // The whole run afterwards sees the sharing the windowed run reported.
  EXPECT_EQ(a.before.shared_bytes, r.after.shared_bytes);
  EXPECT_EQ(runs.windowed.net_shared_change(),
            static_cast<int64_t>(a.before.shared_bytes - w.before.shared_bytes));
}

// A dedupe run in windows first indexes every window, so a window takes its files' copies
// from the windows still to come too: each source is then deduped once for all its
// copies, in the rounds a whole run plans, not once per window that holds a copy (which
// read the source again each time).
TEST_F(WindowedRunTest, EachSourceIsDedupedOnceForAllItsCopies) {
  const auto runs = compare_with_whole_runs();
  if (HasFatalFailure()) return;
  const auto& w = runs.whole.filesystems[0];
  const auto& r = runs.windowed.filesystems[0];
  const auto& a = runs.after.filesystems[0];
  EXPECT_GT(r.windows, 3u);
  EXPECT_EQ(r.planned_rounds, w.planned_rounds);
  EXPECT_EQ(r.planned_bytes, w.planned_bytes);
  EXPECT_EQ(r.dedupe.calls, w.planned_rounds);  // no file here needs a second call
  EXPECT_EQ(r.freed.bytes, w.would_free.bytes);
  EXPECT_EQ(r.before.unique_bytes, w.before.unique_bytes);
  EXPECT_EQ(r.before.allocated_bytes, w.before.allocated_bytes);
  EXPECT_EQ(a.before.allocated_bytes, r.after.allocated_bytes);
}

// -r lists the groups; a windowed run spills them to a temporary file as each window is
// planned and prints them from there. Whole files get the same destinations either way.
TEST_F(WindowedRunTest, ListedGroupsNameTheSameDestinations) {
  auto destinations = [&](const JobReport& r) {
    std::set<std::string> out;
    EXPECT_FALSE(r.filesystems.empty());
    if (r.filesystems.empty()) return out;
    auto all = r.filesystems[0].groups.read_all();
    EXPECT_TRUE(all) << all.error().message();
    if (!all) return out;
    for (const auto& g : *all)
      for (const auto& m : g.members)
        if (g.whole_file && m.destination) {
          EXPECT_TRUE(out.insert(m.path).second) << m.path;
        }
    return out;
  };
  auto o = options(false);
  o.list_groups = true;
  const auto whole = destinations(run(o));
  o.window_files = 4;
  const auto windowed = destinations(run(o));
  EXPECT_EQ(whole.size(), 2u * 13);  // c2 and c3: every file with data
  EXPECT_EQ(windowed, whole);
}

// A report in windows takes one earlier twin per whole-file hash: the third copy's
// window then holds the first copy's file only, and grows the group the second copy's
// window counted instead of counting another.
// Its rounds and listing too: each window plans and lists its pair with the first copy, and
// the rounds are counted, and the listing reads back, as the whole run's groups of three.
TEST_F(WindowedRunTest, AReportInWindowsCountsAndListsEachGroupOnce) {
  auto o = options(false);
  o.list_groups = true;
  const auto [whole, windowed] = report_whole_and_in_windows(o, 4);
  ASSERT_FALSE(whole.filesystems.empty());
  ASSERT_FALSE(windowed.filesystems.empty());
  const auto& w = whole.filesystems[0];
  const auto& r = windowed.filesystems[0];
  EXPECT_GT(r.windows, 2u);
  EXPECT_EQ(r.whole_file_groups, w.whole_file_groups);
  EXPECT_EQ(w.whole_file_groups, 13u);  // each file with data of c1, with its two copies
  EXPECT_EQ(r.planned_rounds, w.planned_rounds);
  const auto whole_listed = whole_file_members(w.groups);
  EXPECT_EQ(whole_listed.size(), 13u);
  EXPECT_EQ(whole_file_members(r.groups), whole_listed);
  for (const auto& members : whole_listed) EXPECT_EQ(members.size(), 3u);
  // The capped whole read it began with lies in no phase, but in the run's time.
  const auto totals = run_totals(windowed);
  EXPECT_GT(windowed.seconds, 0.0);
  EXPECT_DOUBLE_EQ(totals.total_seconds(), windowed.seconds);
}

// Three copies of one file, each in a window of its own: the first in 2 extents, the second
// in 3, the third in 1. A whole run keeps the third as the source. The second window pairs
// the second copy with the first (the source there); the third window holds the first
// copy (by its whole-file hash) and the second (by its sums' anchors) beside its own. The
// earlier copies are that window's sources, never its destinations again: a report in
// windows plans and would free what the whole run does, and a dedupe in windows frees it,
// as `btrfs filesystem df` shows.
TEST_F(WindowedRunTest, EarlierCopiesAreSourcesSoAReportPlansWhatAWholeRunDoes) {
  const std::string data = fs().image_file() + ".frag";
  sh("head -c 1048576 /dev/urandom > " + shell_quote(data) + " && mkdir " + shell_quote(path("tree/f")));
  // One O_DIRECT write per extent, each committed before the next.
  const auto write = [&](const std::string& name, const std::vector<int>& pieces_kib) {
    int at = 0;
    for (int kib : pieces_kib) {
      sh("dd if=" + shell_quote(data) + " of=" + shell_quote(path("tree/f/" + name)) +
         " bs=" + std::to_string(kib) + "K skip=" + std::to_string(at) + "K seek=" +
         std::to_string(at) + "K count=1 conv=notrunc oflag=direct,seek_bytes"
         " iflag=fullblock,skip_bytes status=none && sync");
      at += kib;
    }
    const auto fd = open_or_fail(path("tree/f/" + name));
    return inode_items(fd.get(), inode_of(path("tree/f/" + name)), BTRFS_EXTENT_DATA_KEY).size();
  };
  ASSERT_EQ(write("1", {512, 512}), 2u);
  ASSERT_EQ(write("2", {256, 256, 512}), 3u);
  ASSERT_EQ(write("3", {1024}), 1u);
  sh("rm -f " + shell_quote(data));
  auto o = options(false);
  o.paths = {path("tree/f")};
  const auto [whole, windowed] = report_whole_and_in_windows(o, 1);
  ASSERT_FALSE(whole.filesystems.empty());
  ASSERT_FALSE(windowed.filesystems.empty());
  const auto& w = whole.filesystems[0];
  EXPECT_EQ(windowed.filesystems[0].windows, 3u);
  EXPECT_EQ(w.planned_bytes, 2u << 20);
  EXPECT_FALSE(dedupe_in_windows_of_one(o, w).filesystems.empty());
}

// Nine copies of one file, a window each. A report takes the first copy as the source of
// each later copy, as its own window read and summed it (VerifiedTwins, kept as read): it
// sums each copy once, as a whole run does. A dedupe's first window takes copies 2-4
// ahead, the fifth's window takes the first copy as an earlier twin (read, then kept) and
// copies 6-8 ahead, and the ninth's takes the first copy from what the fifth's kept. Both
// plan and free what a whole run does, as btrfs filesystem df shows, and leave nothing.
TEST_F(WindowedRunTest, LaterWindowsTakeAKeptSourceAndFreeWhatAWholeRunWould) {
  const std::string nine = path("tree/nine");
  sh("mkdir " + shell_quote(nine) + " && head -c 1048576 /dev/urandom > " + shell_quote(nine + "/1") +
     " && for i in $(seq 2 9); do cp --reflink=never " + shell_quote(nine + "/1") + " " +
     shell_quote(nine) + "/$i; done && sync");
  auto o = options(false);
  o.paths = {nine};
  const auto [whole, windowed] = report_whole_and_in_windows(o, 1);
  ASSERT_FALSE(whole.filesystems.empty());
  ASSERT_FALSE(windowed.filesystems.empty());
  const auto& w = whole.filesystems[0];
  EXPECT_EQ(windowed.filesystems[0].windows, 9u);
  EXPECT_EQ(w.planned_bytes, 8u << 20);
  EXPECT_EQ(windowed.filesystems[0].planned_rounds, w.planned_rounds);
  // The copies' own sums, the first copy's not again as a twin.
  EXPECT_EQ(w.fingerprints.bytes_from_csums, 9u << 20);
  EXPECT_EQ(windowed.filesystems[0].fingerprints.bytes_from_csums, 9u << 20);
  const auto deduped = dedupe_in_windows_of_one(o, w);
  ASSERT_FALSE(deduped.filesystems.empty());
  EXPECT_EQ(deduped.filesystems[0].windows, 9u);
  EXPECT_EQ(deduped.filesystems[0].dedupe.bytes_deduped, 8u << 20);
}

// Windows take and leave out files by the whole scan's rule, and count what they leave
// out as it does: files under --min-size, files --exclude names, inline data.
TEST_F(WindowedRunTest, WindowsCountWhatTheyLeaveOutAsAWholeRun) {
  sh("cd " + shell_quote(path("tree")) + " && for i in 1 2 3; do echo small$i > c1/s$i; done");
  auto o = options(false);
  o.min_file_size = 100000;  // 6 of each copy's 12 files in d1..d3, and the small ones
  o.exclude = [](const std::string&, const std::string& relative) {
    return relative.rfind("c3/d3/", 0) == 0;
  };
  const auto whole = run(o);
  o.window_files = 4;
  const auto windowed = run(o);
  o.min_file_size = 0;
  const auto inline_windowed = run(o);
  o.window_files = 0;
  const auto inline_whole = run(o);
  ASSERT_FALSE(whole.filesystems.empty());
  ASSERT_FALSE(windowed.filesystems.empty());
  const auto& w = whole.filesystems[0];
  const auto& r = windowed.filesystems[0];
  EXPECT_EQ(w.windows, 0u);
  EXPECT_GT(r.windows, 1u);
  EXPECT_EQ(w.excluded, 4u);  // c3/d3's files
  EXPECT_GT(w.passed_over.excluded_files, 3u * 6);
  EXPECT_EQ(r.excluded, w.excluded);
  EXPECT_EQ(r.passed_over.excluded_files, w.passed_over.excluded_files);
  EXPECT_EQ(r.files, w.files);
  EXPECT_EQ(r.whole_file_groups, w.whole_file_groups);
  ASSERT_FALSE(inline_whole.filesystems.empty());
  ASSERT_FALSE(inline_windowed.filesystems.empty());
  EXPECT_EQ(inline_whole.filesystems[0].passed_over.inline_extents, 3u);
  EXPECT_EQ(inline_windowed.filesystems[0].passed_over.inline_extents, 3u);
  EXPECT_EQ(inline_windowed.filesystems[0].excluded, inline_whole.filesystems[0].excluded);
}

// Past the automatic limit (lowered here) the run takes windows: at once when the inode
// numbers tell of well more files (here counted exactly: fewer numbers than probes), after
// a whole read up to the limit when the estimate is near it.
TEST_F(WindowedRunTest, ATreeLargerThanAWholeRunMayHoldIsReadInWindows) {
  auto o = options(true);
  o.whole_run_files = 10;  // the automatic limit, lowered: 40 files are too many
  const auto r = run(o);
  ASSERT_FALSE(r.filesystems.empty());
  // The subvolume's regular files, as a whole read counts them against its limit: the
  // tree's 40 and the two lists of sums and mtimes beside it.
  EXPECT_EQ(r.estimated_files, files_ + 2);
  EXPECT_EQ(r.whole_scans_abandoned, 0u);
  EXPECT_EQ(r.filesystems[0].windows, 1u);  // 40 files fit one automatic window
  EXPECT_EQ(r.filesystems[0].files, files_);
  EXPECT_GT(r.filesystems[0].dedupe.bytes_deduped, 0u);
  expect_content_and_mtimes_unchanged();
  const auto again = run(options(false));
  ASSERT_FALSE(again.filesystems.empty());
  EXPECT_EQ(again.filesystems[0].planned_bytes, 0u);

  o.dedupe = false;
  o.whole_run_files = files_;  // 42 files are too many, but within the estimate's margin
  const auto near = run(o);
  ASSERT_FALSE(near.filesystems.empty());
  EXPECT_EQ(near.whole_scans_abandoned, 1u);
  EXPECT_EQ(near.filesystems[0].windows, 1u);
  EXPECT_EQ(near.filesystems[0].files, files_);
  const auto near_json = nlohmann::json::parse(json_report(near, o, {}));
  EXPECT_EQ(near_json["totals"]["estimated_files"], files_ + 2);

  o.whole_run_files = 1000;  // a limit the tree is well below: no windows
  const auto whole = run(o);
  ASSERT_FALSE(whole.filesystems.empty());
  EXPECT_EQ(whole.filesystems[0].windows, 0u);
  EXPECT_EQ(whole.whole_scans_abandoned, 0u);
}

// A root that is a directory of subvolumes (copies, a backup pool) holds no file of its
// own: the estimate counts the nested subvolumes a whole read would reach, so the run
// takes windows at once instead of reading up to the limit for nothing.
TEST_F(WindowedRunTest, NestedSubvolumesCountInTheEstimateOfTheFiles) {
  const std::string pool = shell_quote(path(""));
  sh("cd " + pool + " && btrfs -q subvolume create pool && for s in s1 s2; do"
     " btrfs -q subvolume create pool/$s && cp -r --reflink=never tree/c1 pool/$s/; done"
     " && btrfs -q subvolume snapshot -r pool/s1 pool/s1-snap && sync");
  JobOptions o;
  o.paths = {path("pool")};
  o.recursive = true;
  o.whole_run_files = 10;  // lowered: 2 x 13 files, and a snapshot of 13 that folds
  const auto r = run(o);
  ASSERT_FALSE(r.filesystems.empty());
  EXPECT_EQ(r.estimated_files, 2u * 13);
  EXPECT_EQ(r.whole_scans_abandoned, 0u);
  EXPECT_GT(r.filesystems[0].windows, 0u);
  o.whole_run_files = kWholeRunFiles;
  const auto whole = run(o);
  ASSERT_FALSE(whole.filesystems.empty());
  EXPECT_EQ(whole.filesystems[0].windows, 0u);
  EXPECT_EQ(r.filesystems[0].files, whole.filesystems[0].files);
  EXPECT_EQ(r.filesystems[0].planned_bytes, whole.filesystems[0].planned_bytes);
  EXPECT_GT(whole.filesystems[0].planned_bytes, 0u);

  // A subvolume reached from two roots counts once, a file among the roots too.
  o.paths = {path("pool"), path("pool/s1"), path("pool/s2/c1/half")};
  o.whole_run_files = 10;
  const auto overlapping = run(o);
  EXPECT_EQ(overlapping.estimated_files, 2u * 13);
}

TEST_F(WindowedRunTest, HashfileOfAWindowedRunServesTheNextRuns) {
  auto o = windowed_on_hashfile(true);
  const auto first = run(o);
  ASSERT_FALSE(first.filesystems.empty());
  EXPECT_GT(first.filesystems[0].windows, 1u);
  EXPECT_EQ(first.filesystems[0].catalog.files_changed, files_);
  expect_every_file_catalogued();
  const auto unchanged = run(o);
  ASSERT_FALSE(unchanged.filesystems.empty());
  EXPECT_TRUE(unchanged.filesystems[0].catalog.unchanged);

  // A new copy: the next run is incremental and dedupes it against the catalogued files.
  sh("cd " + shell_quote(path("tree")) + " && cp -r --reflink=never c3 c4 && sync");
  const auto next = run(o);
  ASSERT_FALSE(next.filesystems.empty());
  EXPECT_TRUE(next.filesystems[0].catalog.incremental);
  EXPECT_EQ(next.filesystems[0].windows, 0u);
  EXPECT_GT(next.filesystems[0].dedupe.bytes_deduped, 0u);
  const auto left = run(options(false));
  ASSERT_FALSE(left.filesystems.empty());
  EXPECT_EQ(left.filesystems[0].planned_bytes, 0u);
}

// duperemove's habit: a report first (-r), then -d on the same hashfile. The report left
// its duplicates pending, so the dedupe run matches every file again: in windows too, its
// rows written afresh.
TEST_F(WindowedRunTest, DedupeAfterAReportOnTheSameHashfileIsWindowedToo) {
  auto o = windowed_on_hashfile(false);
  const auto report = run(o);
  ASSERT_FALSE(report.filesystems.empty());
  EXPECT_GT(report.filesystems[0].windows, 1u);
  const uint64_t planned = report.filesystems[0].planned_bytes;
  ASSERT_GT(planned, 0u);

  o.dedupe = true;
  const auto dedupe = run(o);
  ASSERT_FALSE(dedupe.filesystems.empty());
  const auto& d = dedupe.filesystems[0];
  EXPECT_GT(d.windows, 1u);
  EXPECT_FALSE(d.catalog.incremental);
  EXPECT_EQ(d.planned_bytes, planned);
  EXPECT_EQ(d.dedupe.bytes_deduped, planned);
  EXPECT_EQ(dedupe.exit_code(), 0);
  expect_every_file_catalogued();
  const auto again = run(o);
  ASSERT_FALSE(again.filesystems.empty());
  EXPECT_TRUE(again.filesystems[0].catalog.unchanged);
  expect_content_and_mtimes_unchanged();
}

TEST_F(WindowedRunTest, TemporaryCatalogIsRemoved) {
  const std::string tmp = fs().image_file() + ".tmpdir";
  std::filesystem::create_directories(tmp);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  // A catalog left by a run that died (no such pid) goes; one of a live process stays.
  const std::string dead = tmp + "/btrdedupe-window-999999999-AbCdEf";
  const std::string live = tmp + "/btrdedupe-window-" + std::to_string(::getpid()) + "-x";
  for (const auto& f : {dead, dead + "-wal", live}) sh("touch " + shell_quote(f));
  auto o = options(true);
  o.window_files = 9;
  const auto r = run(o);
  if (old)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  ASSERT_FALSE(r.filesystems.empty());
  EXPECT_GT(r.filesystems[0].windows, 1u);
  EXPECT_FALSE(r.filesystems[0].catalog.used);  // no --hashfile: nothing to report of one
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(tmp)) left.push_back(e.path());
  EXPECT_EQ(left, std::vector<std::string>{live});
  std::filesystem::remove_all(tmp);
}

// A backup pool: a subvolume with read-only snapshots taken between edits, and tonight's
// unshared copy. Windows fold each snapshot's files that are still the origin's (or an
// earlier snapshot's) as a whole scan folds them, and dedupe tonight's copy fully.
TEST_F(WindowedRunTest, BackupPoolWithReadOnlySnapshotsIsReadInWindows) {
  const std::string pool = shell_quote(path(""));
  sh("cd " + pool + " && btrfs -q subvolume create sv && cp -r --reflink=never tree/c1 sv/"
     " && echo tiny > sv/c1/tiny && btrfs -q subvolume snapshot -r sv sv/snap1"
     " && head -c 70000 /dev/urandom >> sv/c1/d1/f1 && rm sv/c1/d2/f2"
     " && btrfs -q subvolume snapshot -r sv sv/snap2"
     " && cp -r --reflink=never tree/c1 sv/tonight && sync");
  auto snapshot_state = [&] {
    return run_command("cd " + pool + " && for s in snap1 snap2; do btrfs subvolume show sv/$s"
                       " | grep -E 'Generation|Gen at creation'; (cd sv/$s && find . -type f"
                       " -exec md5sum {} + | sort -k2; find c1 -exec stat -c '%n %Y' {} + | sort);"
                       " done").output;
  };
  const std::string snapshots_before = snapshot_state();
  JobOptions o;
  o.paths = {path("sv")};
  o.recursive = true;
  const auto whole = run(o);
  ASSERT_FALSE(whole.filesystems.empty());
  const auto& w = whole.filesystems[0];
  ASSERT_EQ(w.windows, 0u);
  // snap1 keeps c1/d1/f1 as it was and d2/f2; every other snapshot file is sv's.
  EXPECT_EQ(w.passed_over.readonly_aliases, 2u * 13 - 2 + 1);
  EXPECT_EQ(w.passed_over.inline_extents, 3u);  // tiny, in sv and both snapshots

  // Past the automatic limit (lowered here) the run takes windows: it is no longer refused.
  o.whole_run_files = 10;
  const auto automatic = run(o);
  ASSERT_FALSE(automatic.filesystems.empty());
  EXPECT_GT(automatic.filesystems[0].windows, 0u);
  // sv's inline-only file is counted as a whole scan counts it, though no window holds it.
  EXPECT_EQ(automatic.filesystems[0].files, w.files);
  EXPECT_EQ(automatic.filesystems[0].passed_over.readonly_aliases, w.passed_over.readonly_aliases);
  EXPECT_EQ(automatic.exit_code(), 0);

  o.dedupe = true;
  o.window_files = 4;
  const auto windowed = run(o);
  ASSERT_FALSE(windowed.filesystems.empty());
  const auto& r = windowed.filesystems[0];
  EXPECT_GT(r.windows, 1u);
  EXPECT_EQ(r.files, w.files);
  EXPECT_EQ(r.passed_over.readonly_aliases, w.passed_over.readonly_aliases);
  EXPECT_EQ(r.passed_over.inline_extents, w.passed_over.inline_extents);
  EXPECT_EQ(r.passed_over.inline_bytes, w.passed_over.inline_bytes);
  EXPECT_EQ(r.dedupe.ranges_differ + r.dedupe.ranges_changed + r.dedupe.ranges_failed, 0u);
  EXPECT_EQ(windowed.exit_code(), 0);
  EXPECT_GT(r.freed.bytes, 0u);

  // Tonight's copy shares all its data; nothing is left to do; no snapshot changed.
  sh("btrfs filesystem sync " + pool);
  const auto du = run_command("btrfs filesystem du -s --raw " + shell_quote(path("sv/tonight")) +
                              " | tail -1 | awk '{print $2}'");
  EXPECT_EQ(du.output, "0\n");
  o.dedupe = false;
  o.window_files = 0;
  o.whole_run_files = kWholeRunFiles;
  const auto after = run(o);
  ASSERT_FALSE(after.filesystems.empty());
  EXPECT_EQ(after.filesystems[0].planned_bytes, 0u);
  // snap1's two files of its own now have tonight's layout too: a whole scan's layout index
  // folds them as well (windows fold by inode only).
  EXPECT_EQ(after.filesystems[0].passed_over.readonly_aliases, w.passed_over.readonly_aliases + 2);
  EXPECT_EQ(snapshot_state(), snapshots_before);
}

// The next night of a backup pool: a new read-only snapshot makes the hashfile's run read
// the trees whole; past the whole-run limit it takes windows again, its rows written afresh,
// instead of holding every file.
TEST_F(WindowedRunTest, NextNightOfABackupPoolIsReadInWindowsAgain) {
  const std::string pool = shell_quote(path(""));
  sh("cd " + pool + " && btrfs -q subvolume create sv && cp -r --reflink=never tree/c1 sv/"
     " && cp -r --reflink=never tree/c1 sv/night1 && sync");
  hashfile_ = fs().image_file() + ".hash";
  JobOptions o;
  o.paths = {path("sv")};
  o.recursive = true;
  o.dedupe = true;
  o.hashfile = hashfile_;
  // The automatic limit, lowered: 26 files are too many, though within the margin of the
  // estimate from inode numbers (which alone would take windows at once).
  o.whole_run_files = 24;
  const auto first = run(o);
  ASSERT_FALSE(first.filesystems.empty());
  EXPECT_GT(first.filesystems[0].windows, 0u);
  EXPECT_EQ(first.estimated_files, 26u);
  EXPECT_EQ(first.whole_scans_abandoned, 1u);  // nothing catalogued: read up to the cap first
  const auto first_json = nlohmann::json::parse(json_report(first, o, {}));
  EXPECT_EQ(first_json["totals"]["whole_scans_abandoned"], 1);

  sh("cd " + pool + " && btrfs -q subvolume snapshot -r sv sv/snap1"
     " && cp -r --reflink=never tree/c1 sv/night2 && sync");
  const auto next = run(o);
  ASSERT_FALSE(next.filesystems.empty());
  const auto& r = next.filesystems[0];
  EXPECT_GT(r.windows, 0u);
  // The hashfile holds 26 rows, past the cap: windows at once, no whole read given up.
  EXPECT_EQ(next.whole_scans_abandoned, 0u);
  EXPECT_FALSE(r.catalog.incremental);
  EXPECT_EQ(r.files, 3u * 13);
  EXPECT_EQ(r.passed_over.readonly_aliases, 2u * 13);  // snap1 holds c1 and night1
  EXPECT_EQ(r.dedupe.bytes_deduped, first.filesystems[0].dedupe.bytes_deduped);
  EXPECT_EQ(next.exit_code(), 0);
  {
    auto catalog = Catalog::open(hashfile_);
    ASSERT_TRUE(catalog) << catalog.error().message();
    EXPECT_EQ((*catalog)->counts().files, 3u * 13);
  }
  const auto again = run(o);
  ASSERT_FALSE(again.filesystems.empty());
  EXPECT_TRUE(again.filesystems[0].catalog.unchanged);
  // (du reads the directories: on relatime their atimes move, and with them the generation.)
  sh("btrfs filesystem sync " + pool);
  const auto du = run_command("btrfs filesystem du -s --raw " + shell_quote(path("sv/night2")) +
                              " | tail -1 | awk '{print $2}'");
  EXPECT_EQ(du.output, "0\n");
}

}  // namespace
}  // namespace btrdedupe::test
