// The "Summary:" block that closes the text report (src/report/text_summary.h), from a
// report built here: the figures summed over the filesystems, the signed net changes, the
// ranges left alone by errno, the first errors, and what stopped the run.
#include "src/report/text_summary.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <string>

#include "src/dedupe/dedupe_engine.h"
#include "support/captured_output.h"

namespace btrdedupe {
namespace {

std::string summary(const JobReport& report, const JobOptions& job,
                    const TextReportOptions& options) {
  return capture([&](std::FILE* out) {
    print_text_summary(report, job, options, kTreeWords, out);
  });
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Two filesystems whose figures add up to known sums.
JobReport two_filesystems() {
  JobReport r;
  r.filesystems.resize(2);
  for (uint64_t i = 0; i < 2; ++i) {
    auto& fs = r.filesystems[i];
    fs.deduped = true;
    fs.fingerprints.extents_from_twins = 3 + i;       // 7
    fs.dedupe.bytes_deduped = 4096 * (1 + i);         // 12288
    fs.dedupe.calls = 10 + i;                         // 21
    fs.freed.bytes = 1000 + i;                        // 2001
    fs.readonly_ranges_left = 20 + i;                 // 41
  }
  return r;
}

TEST(TextSummary, ADedupeThatSharedLessThanBeforeSaysSoWithASign) {
  JobReport r = two_filesystems();
  // The first filesystem lost shared bytes (a rewrite), the second gained fewer.
  r.filesystems[0].before.shared_bytes = 9000;
  r.filesystems[0].after.shared_bytes = 1000;
  r.filesystems[1].before.shared_bytes = 0;
  r.filesystems[1].after.shared_bytes = 3000;
  r.filesystems[0].before.in_shared_extents = 100;
  r.filesystems[0].after.in_shared_extents = 700;
  JobOptions job;
  job.dedupe = true;
  const std::string s = summary(r, job, {});
  const int64_t net = (1000 - 9000) + (3000 - 0);
  ASSERT_EQ(r.net_shared_change(), net);
  EXPECT_TRUE(has(s, ", 7 from compressed twins")) << s;
  EXPECT_TRUE(has(s, "  deduped:        12288 in 21 calls; newly shared -" +
                         std::to_string(-net) + " (each byte once; 600 in shared extents"))
      << s;
  EXPECT_TRUE(has(s, "  freed:          2001 of disk space (" + std::string(kTreeWords.freed_as) +
                         ")\n"))
      << s;
  EXPECT_TRUE(has(s, "; 41 in read-only snapshots (by design)")) << s;
}

TEST(TextSummary, RangesRefusedAreCountedByTheirErrno) {
  JobReport r = two_filesystems();
  r.filesystems[0].dedupe.errors_by_code = {{EPERM, 2}, {EXDEV, 1}};
  r.filesystems[1].dedupe.errors_by_code = {{EPERM, 5}};
  JobOptions job;
  job.dedupe = true;
  const std::string s = summary(r, job, {});
  EXPECT_TRUE(has(s, "; 7 " + dedupe_error_reason(EPERM) + " (EPERM)")) << s;
  EXPECT_TRUE(has(s, "; 1 " + dedupe_error_reason(EXDEV) + " (EXDEV)")) << s;
}

TEST(TextSummary, TheFirstFiveErrorsAreQuotedAndTheRestCounted) {
  JobReport r = two_filesystems();
  r.path_errors = {"p1", "p2"};
  r.filesystems[0].error = "fs0 failed";
  r.filesystems[0].fingerprints.errors = {"read1", "read2"};
  r.filesystems[1].dedupe.messages = {"dedupe1", "dedupe2", "dedupe3"};
  const std::string s = summary(r, {}, {});
  for (const char* quoted : {"p1", "p2", "fs0 failed", "read1", "read2"})
    EXPECT_TRUE(has(s, std::string("    ") + quoted + "\n")) << quoted << "\n" << s;
  EXPECT_FALSE(has(s, "    dedupe1\n")) << s;
  EXPECT_TRUE(has(s, "    ... 3 more on stderr\n")) << s;
  EXPECT_TRUE(has(s, "  errors:         2 paths not scanned, 1 filesystems failed")) << s;
}

TEST(TextSummary, ARunStoppedAtItsDeadlineSaysWhatItLeft) {
  JobReport r = two_filesystems();
  r.filesystems[0].dedupe.rounds_not_started = 4;
  r.filesystems[0].dedupe.bytes_not_started = 16384;
  r.filesystems[1].dedupe.rounds_not_started = 1;
  r.filesystems[1].dedupe.bytes_not_started = 4096;
  r.stopped = true;
  r.time_up = true;
  JobOptions job;
  job.dedupe = true;
  const std::string s = summary(r, job, {});
  EXPECT_TRUE(has(s, "  stopped:        at --max-runtime, after the dedupe rounds under way; "
                     "20480 in 5 rounds left for the next run\n"))
      << s;
  EXPECT_FALSE(has(s, "on SIG")) << s;
}

TEST(TextSummary, ARunStoppedBySignalNamesIt) {
  JobReport r = two_filesystems();
  r.stopped = true;
  TextReportOptions o;
  o.signal = SIGTERM;
  const std::string s = summary(r, {}, o);
  EXPECT_TRUE(has(s, "  stopped:        on SIGTERM, after the dedupe rounds under way\n")) << s;
  EXPECT_FALSE(has(s, "--max-runtime")) << s;
  // Not stopped: no line.
  EXPECT_FALSE(has(summary(r, {}, {}), "stopped:"));
}

TEST(TextSummary, WithoutADedupeItSaysWhatOneWouldFree) {
  JobReport r = two_filesystems();
  r.filesystems[0].would_free.bytes = 300;
  r.filesystems[1].would_free.bytes = 400;
  TextReportOptions dry;
  dry.dry_run = true;
  const std::string s = summary(r, {}, dry);
  EXPECT_TRUE(has(s, "  deduped:        nothing (--dry-run)\n")) << s;
  EXPECT_TRUE(has(s, "  would free:     700 of disk space with -d\n")) << s;
  EXPECT_TRUE(has(summary(r, {}, {}), "  deduped:        nothing (no -d)\n"));
}

TEST(TextSummary, AWholeReadGivenUpForWindowsIsNamedInTheTime) {
  JobReport r = two_filesystems();
  r.whole_scans_abandoned = 1;
  r.seconds = 9.5;
  r.filesystems[0].seconds.scan = 1.25;
  JobOptions job;
  job.whole_run_files = 1234;
  const std::string s = summary(r, job, {});
  EXPECT_TRUE(has(s, "  elapsed:        9.50 s (scan 1.25, fingerprint 0.00")) << s;
  EXPECT_TRUE(has(s, "between 8.25); a whole read, given up past 1234 files for windows, is "
                     "between\n"))
      << s;
}

}  // namespace
}  // namespace btrdedupe
