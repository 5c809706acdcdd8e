// The text report of a filesystem's section, from a report built here with every figure a
// number of the test's own choosing: each line says the figures it was given, and only
// when the run has something of that kind to say.
#include "src/report/text_report.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "src/read/reader_kind.h"
#include "support/captured_output.h"

namespace btrdedupe {
namespace {

struct Printed {
  std::string out, err;
};

Printed print(const JobReport& report, const JobOptions& job, const TextReportOptions& options) {
  Printed p;
  p.out = capture([&](std::FILE* out) {
    p.err = capture([&](std::FILE* err) { print_text_report(report, job, options, out, err); });
  });
  return p;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string n(uint64_t v) { return std::to_string(v); }

// A filesystem whose figures are distinct numbers, so that each can be told in the text.
FilesystemReport filesystem() {
  FilesystemReport fs;
  fs.fsid = "0123-fsid";
  fs.roots = {"/mnt/a"};
  fs.subvolumes = 3;
  fs.files = 11;
  fs.extents = 13;
  fs.before.logical_bytes = 40960;
  fs.before.allocated_bytes = 36864;
  return fs;
}

TEST(TextReport, AWalkedScanNamesItsFirstFourRootsAndCountsTheRest) {
  JobReport r;
  r.reader = reader_name(ReaderKind::Paths);
  FilesystemReport fs = filesystem();
  fs.roots = {"/r0", "/r1", "/r2", "/r3", "/r4", "/r5"};
  fs.excluded = 17;
  r.filesystems.push_back(fs);
  const Printed p = print(r, {}, {});
  EXPECT_TRUE(has(p.out, "Scanned /r0, /r1, /r2, /r3 and 2 more: 3 subvolume(s), 11 files, "
                         "13 extents (walked, mapped with FIEMAP"))
      << p.out;
  EXPECT_FALSE(has(p.out, "/r4")) << p.out;
  EXPECT_TRUE(has(p.out, "  excluded by --exclude: 17 files and subvolumes\n")) << p.out;
  EXPECT_EQ(p.err, "");

  // The tree reader counts its items and searches instead; nothing excluded, nothing said.
  r.reader = reader_name(ReaderKind::Tree);
  r.filesystems[0].roots.resize(4);
  r.filesystems[0].excluded = 0;
  r.filesystems[0].tree_items = 19;
  r.filesystems[0].tree_searches = 23;
  const Printed tree = print(r, {}, {});
  EXPECT_TRUE(has(tree.out, "Scanned /r0, /r1, /r2, /r3: 3 subvolume(s), 11 files, 13 extents "
                            "(19 tree items in 23 searches"))
      << tree.out;
  EXPECT_FALSE(has(tree.out, "more:")) << tree.out;
  EXPECT_FALSE(has(tree.out, "excluded by --exclude")) << tree.out;
}

TEST(TextReport, FingerprintLinesSayWhatTwinsAndTheHashfileSaved) {
  JobReport r;
  FilesystemReport fs = filesystem();
  fs.fingerprints.extents_from_twins = 29;
  fs.fingerprints.bytes_from_twins = 118784;
  fs.windows = 4;
  fs.window_files = 31;
  fs.catalog.used = true;
  fs.catalog.files_changed = 37;
  fs.catalog.candidates = 41;
  fs.catalog.incremental = true;
  fs.catalog.stale_rows = 43;
  r.filesystems.push_back(fs);
  JobOptions job;
  job.window_files = 31;
  const Printed p = print(r, job, {});
  EXPECT_TRUE(has(p.out, "  29 compressed extents (118784) took the sums of a twin")) << p.out;
  EXPECT_TRUE(has(p.out, "read, matched and deduped in 4 windows of 31 files (-B)")) << p.out;
  EXPECT_TRUE(has(p.out, "Hashfile: rows written afresh for 37 files, read in windows; 41 "
                         "files of earlier windows read back"))
      << p.out;
  EXPECT_TRUE(has(p.out, "Incremental run: only tree leaves written since the last run were "
                         "read; 43 rows of files gone removed"))
      << p.out;

  // Whole, with a hashfile: the changed, the known and the candidates.
  r.filesystems[0].windows = 0;
  r.filesystems[0].catalog.incremental = false;
  r.filesystems[0].catalog.files_known = 47;
  const Printed whole = print(r, {}, {});
  EXPECT_TRUE(has(whole.out, "Hashfile: 37 files new or changed since the last run, 47 unchanged "
                             "(not fingerprinted again), 41 unchanged ones"))
      << whole.out;
  EXPECT_FALSE(has(whole.out, "Incremental run")) << whole.out;

  // -q: none of it.
  TextReportOptions quiet;
  quiet.quiet = true;
  EXPECT_EQ(print(r, {}, quiet).out, "");
}

TEST(TextReport, TheDuplicatesLinesSayWhatIsLeftAndWhatWasAdded) {
  JobReport r;
  FilesystemReport fs = filesystem();
  fs.whole_file_groups = 2;
  fs.partial_groups = 5;
  fs.planned_bytes = 53248;
  fs.planned_rounds = 7;
  fs.readonly_ranges_left = 53;
  fs.freeing_runs.groups = 59;
  fs.freeing_runs.bytes = 61440;
  fs.freeing_runs.extents = 61;
  fs.rewrite.planned_extents = 67;
  fs.rewrite.planned_bytes = 274432;
  fs.rewrite.skipped_for_budget = 71;
  fs.rewrite.bytes_skipped_for_budget = 290816;
  r.filesystems.push_back(fs);
  TextReportOptions dry;
  dry.dry_run = true;
  const Printed p = print(r, {}, dry);
  EXPECT_TRUE(has(p.out, "Found 2 whole-file and 5 partial duplicate groups: 53248 to dedupe "
                         "(53 ranges in read-only snapshots left as they are)"))
      << p.out;
  EXPECT_TRUE(has(p.out, "found 7 instances of extents")) << p.out;
  EXPECT_TRUE(has(p.out, "  of the groups, 59 are short runs (61440) added because they let 61 "
                         "extents go whole\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "  of which 67 extents once their small unique remainders are "
                         "rewritten (274432 to write)\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "  71 more extents with small remainders left for the write budget "
                         "(290816 not written)\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "Dry run: -d would dedupe 53248 in 7 rounds")) << p.out;
  // Nothing was deduped: no dedupe line, no rewrite said done.
  EXPECT_FALSE(has(p.out, "Deduped ")) << p.out;
  EXPECT_FALSE(has(p.out, "Rewrote ")) << p.out;
}

FilesystemReport deduped_filesystem() {
  FilesystemReport fs = filesystem();
  fs.deduped = true;
  fs.io_threads = 2;
  fs.dedupe.bytes_deduped = 73728;
  fs.dedupe.calls = 73;
  fs.dedupe.ranges_unequal = 79;
  fs.dedupe.bytes_narrowed = 323584;
  fs.dedupe.bytes_prefetched = 335872;
  fs.dedupe.errors_by_code = {{EPERM, 83}, {ENOSPC, 89}};
  fs.dedupe.ranges_failed = 83 + 89;
  fs.rewrite.planned_extents = 97;
  fs.rewrite.ranges_rewritten = 101;
  fs.rewrite.bytes_written = 413696;
  fs.rewrite.disk_bytes_allocated = 421888;
  fs.rewrite.extents_rewritten = 103;
  fs.rewrite.extents_still_referenced = 107;
  fs.rewrite.ranges_fell_back = 109;
  fs.rewrite.fallback_reason = "/mnt/a/f: No space left on device";
  return fs;
}

TEST(TextReport, ADedupeSaysWhatWasNarrowedRewrittenAndRefused) {
  JobReport r;
  r.filesystems.push_back(deduped_filesystem());
  JobOptions job;
  job.dedupe = true;
  TextReportOptions debug;
  debug.debug = true;
  const Printed p = print(r, job, debug);
  EXPECT_TRUE(has(p.out, "Deduped 73728 in 73 calls")) << p.out;
  EXPECT_TRUE(has(p.out, "  79 ranges of unchanged files were not equal throughout")) << p.out;
  EXPECT_TRUE(has(p.out, "narrowed to their equal parts, 323584 shared\n")) << p.out;
  EXPECT_TRUE(has(p.out, "Rewrote 101 small remainders (413696 written, 421888 in new extents, "
                         "counted against the space freed) so that 103 extents could be freed; "
                         "107 extents still held by other references, not rewritten\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "  109 remainders fell back to plain dedupe (left where they were): "
                         "/mnt/a/f: No space left on device\n"))
      << p.out;
  const std::string by_code = "  debug: 335872 prefetched, errno " + n(EPERM) + " (" +
                              std::strerror(EPERM) + "): 83 ranges, errno " + n(ENOSPC) + " (" +
                              std::strerror(ENOSPC) + "): 89 ranges\n";
  EXPECT_TRUE(has(p.out, by_code)) << p.out;

  // Without the references held, a fall back, nor --debug: none of their words.
  r.filesystems[0].rewrite.extents_still_referenced = 0;
  r.filesystems[0].rewrite.ranges_fell_back = 0;
  r.filesystems[0].rewrite.fallback_reason.clear();
  const Printed plain = print(r, job, {});
  EXPECT_TRUE(has(plain.out, "so that 103 extents could be freed\n")) << plain.out;
  EXPECT_FALSE(has(plain.out, "fell back")) << plain.out;
  EXPECT_FALSE(has(plain.out, "debug:")) << plain.out;
}

SubvolumeFigures subvolume(uint64_t id, const std::string& path, uint64_t exclusive,
                           uint64_t referenced) {
  SubvolumeFigures s;
  s.id = id;
  s.path = path;
  s.before = {referenced, exclusive};
  s.after = s.before;
  return s;
}

TEST(TextReport, PerSubvolumeFiguresBeforeAndAfterADedupe) {
  JobReport r;
  FilesystemReport fs = deduped_filesystem();
  fs.per_subvolume.push_back(subvolume(256, "home", 12288, 20480));
  fs.per_subvolume[0].after = {16384, 4096};
  fs.per_subvolume[0].deduped_bytes = 8192;
  fs.per_subvolume[0].freed_bytes = 6144;
  fs.per_subvolume.push_back(subvolume(257, "snaps/home.1", 1024, 2048));
  fs.per_subvolume[1].readonly = true;
  fs.per_subvolume[1].snapshot_of = "home";
  fs.per_subvolume.push_back(subvolume(258, "empty", 0, 0));  // no data: not listed
  r.filesystems.push_back(fs);
  JobOptions job;
  job.dedupe = true;
  const Printed p = print(r, job, {});
  EXPECT_TRUE(has(p.out, "Per subvolume (bytes on disk; exclusive: referenced by no other "
                         "subvolume scanned):\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "  256 home: exclusive 12288 -> 4096, referenced 20480 -> 16384, "
                         "deduped into it 8192, freed 6144\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "  257 snaps/home.1 (read-only, snapshot of home): exclusive 1024 -> "
                         "1024, referenced 2048 -> 2048\n"))
      << p.out;
  EXPECT_FALSE(has(p.out, "258 empty")) << p.out;
}

TEST(TextReport, PerSubvolumeFiguresSayWhatADedupeWouldDo) {
  JobReport r;
  FilesystemReport fs = filesystem();
  fs.per_subvolume.push_back(subvolume(5, "<top level>", 4096, 8192));
  fs.per_subvolume[0].planned_bytes = 2048;
  fs.per_subvolume[0].would_free_bytes = 1024;
  fs.per_subvolume.push_back(subvolume(300, "snap", 0, 0));
  fs.per_subvolume[1].snapshot_of = "<top level>";
  fs.per_subvolume[1].planned_bytes = 512;  // no bytes of its own yet, but some planned
  r.filesystems.push_back(fs);
  const Printed p = print(r, {}, {});
  EXPECT_TRUE(has(p.out, "  5 <top level>: exclusive 4096, referenced 8192, -d would dedupe "
                         "2048 into it and free 1024\n"))
      << p.out;
  EXPECT_TRUE(has(p.out, "  300 snap (snapshot of <top level>): exclusive 0, referenced 0, -d "
                         "would dedupe 512 into it and free 0\n"))
      << p.out;

  // One subvolume that the run did not choose: no block.
  r.filesystems[0].per_subvolume.resize(1);
  EXPECT_FALSE(has(print(r, {}, {}).out, "Per subvolume")) << p.out;
  // ... but one it chose has one.
  JobOptions chosen;
  chosen.subvolumes.include = {"<top level>"};
  EXPECT_TRUE(has(print(r, chosen, {}).out, "Per subvolume")) << p.out;
}

}  // namespace
}  // namespace btrdedupe
