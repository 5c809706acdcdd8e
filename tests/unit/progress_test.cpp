// Progress lines and events, and the text report's helpers.
#include "src/report/progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "src/report/run_progress.h"
#include "src/report/text_report.h"
#include "support/captured_output.h"

namespace btrdedupe {
namespace {

TEST(Progress, RateAndEtaAreWeightedByBytes) {
  PhaseProgress p{"dedupe", 25 << 20, 100 << 20, 5.0};
  EXPECT_DOUBLE_EQ(p.fraction(), 0.25);
  EXPECT_DOUBLE_EQ(p.rate(), 5.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(p.eta_seconds(), 15.0);
  PhaseProgress unknown{"scan", 0, 0, 1.25};
  EXPECT_EQ(unknown.eta_seconds(), -1);
  PhaseProgress over{"fingerprint", 120, 100, 1.0};
  EXPECT_DOUBLE_EQ(over.fraction(), 1.0);
  EXPECT_EQ(over.eta_seconds(), 0);
}

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(62), "1:02");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "?");
}

// One line for the whole run: redrawn in place through every phase and window, never
// ended with a newline, erased at the end (the summary has the per-phase times).
TEST(Progress, TtyDrawsOneLineForTheWholeRun) {
  const auto out = capture([](std::FILE* f) {
    TtyProgress p(f, std::chrono::milliseconds(0));
    p.progress("scan", 0, 0);
    RunPosition where;
    where.window_bytes = where.bytes_total = 1000;
    where.dedupe = true;
    p.position(where);
    p.progress("fingerprint", 0, 1000);
    p.progress("fingerprint", 1000, 1000);
    p.progress("dedupe", 250, 500);
    p.finish();
  });
  EXPECT_NE(out.find("\r\033[Kscan 0.0 s"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\033[Kfingerprint 100% · 120 B of 1000 B · ETA "), std::string::npos) << out;
  EXPECT_NE(out.find("\r\033[Kdedupe 50% · 550 B of 1000 B · ETA "), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 0) << out;
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K");
}

// The next window's position arrives during this window's last phase: the line names the
// new window only with the phase it starts with.
TEST(Progress, TtyShowsTheNextWindowWithItsOwnPhase) {
  const auto out = capture([](std::FILE* f) {
    TtyProgress p(f, std::chrono::milliseconds(0));
    RunPosition where;
    where.window = where.windows = 1;
    where.window_bytes = where.bytes_total = 1000;
    where.dedupe = true;
    p.position(where);
    p.progress("confirm", 0, 0);
    where.window = where.windows = 2;
    p.position(where);
    p.progress("scan", 0, 0);
    p.finish();
  });
  EXPECT_NE(out.find("window 1/1 · confirm"), std::string::npos) << out;
  EXPECT_NE(out.find("window 2/2 · scan"), std::string::npos) << out;
  EXPECT_EQ(out.find("window 2/2 · confirm"), std::string::npos) << out;
}

// The run's bytes through the pipeline: whole windows done, plus the share of the window
// under way that its phases stand for; the ETA follows the elapsed time.
TEST(RunProgress, EstimateAndLineOfAWindowedRun) {
  RunPosition where;
  where.window = 3;
  where.windows = 7;
  where.estimated = true;
  where.bytes_before = 2ULL << 30;
  where.window_bytes = 1ULL << 30;
  where.bytes_total = 7ULL << 30;
  where.dedupe = true;
  const PhaseProgress dedupe{"dedupe", 41, 100, 2.0};
  const auto e = estimate_run(where, dedupe, 30.0);
  // scan, fingerprint and match are 15% of a window; dedupe 80%, 41% through: 47.8%.
  EXPECT_EQ(e.done, (2ULL << 30) + static_cast<uint64_t>(std::llround((1ULL << 30) * 0.478)));
  EXPECT_EQ(e.total, 7ULL << 30);
  EXPECT_NEAR(e.fraction, (2 + 0.478) / 7, 1e-9);
  EXPECT_NEAR(e.eta_seconds, 30.0 * (1 - e.fraction) / e.fraction, 1e-9);
  EXPECT_EQ(format_run_line(where, dedupe, e),
            "window 3/~7 · dedupe 41% · 2.5 GiB of ~7.0 GiB · ETA ~" +
                format_duration(e.eta_seconds));
  // A slow phase late in the run: the ETA is at least what that phase still needs.
  RunPosition late = where;
  late.bytes_before = 6ULL << 30;
  const PhaseProgress slow{"dedupe", 10, 100, 5.0};  // 90 left at 2 a second: 45 s
  EXPECT_NEAR(estimate_run(late, slow, 30.0).eta_seconds, 45.0, 1e-9);
  // The last window is known exactly; a report-only run's phases weigh differently.
  where.estimated = false;
  where.dedupe = false;
  const PhaseProgress match{"match", 0, 0, 0.5};
  const auto m = estimate_run(where, match, 30.0);
  EXPECT_EQ(m.done, (2ULL << 30) + static_cast<uint64_t>(std::llround((1ULL << 30) * 0.80)));
  EXPECT_EQ(format_run_line(where, match, m).rfind("window 3/7 · match · 2.8 GiB of 7.0 GiB · ETA ", 0), 0u)
      << format_run_line(where, match, m);
  // Nothing known yet: the phase and its seconds; no ETA in the first percent.
  const PhaseProgress scan{"scan", 0, 0, 1.25};
  EXPECT_EQ(format_run_line(RunPosition{}, scan, estimate_run(RunPosition{}, scan, 1.25)),
            "scan 1.2 s");
  RunPosition start;
  start.window_bytes = start.bytes_total = 100;
  start.dedupe = true;
  EXPECT_EQ(estimate_run(start, PhaseProgress{"scan", 0, 0, 0}, 1.0).eta_seconds, -1);
}

TEST(Progress, JsonEventsAreOneObjectPerLine) {
  const auto out = capture([](std::FILE* f) {
    JsonProgress p(f, std::chrono::milliseconds(0));
    p.progress("scan", 0, 0);
    p.progress("fingerprint", 0, 1000);
    p.progress("fingerprint", 500, 1000);
    p.progress("fingerprint", 1000, 1000);
    p.finish(0, false, 4096);
  });
  std::istringstream in(out);
  std::vector<nlohmann::json> events;
  for (std::string line; std::getline(in, line);) events.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(events.size(), 7u) << out;
  EXPECT_EQ(events[0]["event"], "phase");
  EXPECT_EQ(events[0]["phase"], "scan");
  EXPECT_EQ(events[1]["event"], "end");
  EXPECT_EQ(events[2]["event"], "phase");
  EXPECT_EQ(events[2]["total"], 1000);
  EXPECT_EQ(events[3]["event"], "progress");
  EXPECT_EQ(events[3]["done"], 500);
  EXPECT_EQ(events[4]["done"], 1000);
  EXPECT_EQ(events[4]["eta"], 0);
  EXPECT_EQ(events[5]["event"], "end");
  EXPECT_EQ(events[6]["event"], "finish");
  EXPECT_EQ(events[6]["net_shared_change"], 4096);
  EXPECT_EQ(events[6]["exit_code"], 0);
}

TEST(Progress, JsonProgressIsThrottledButEndsAreNot) {
  const auto out = capture([](std::FILE* f) {
    JsonProgress p(f, std::chrono::hours(1));
    p.progress("dedupe", 0, 100);
    for (int i = 1; i < 100; ++i) p.progress("dedupe", static_cast<uint64_t>(i), 100);
    p.progress("dedupe", 100, 100);
    p.finish(0, false, 0);
  });
  // phase, the final progress (done == total), end, finish.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << out;
}

TEST(TextReport, PrintablePaths) {
  EXPECT_EQ(printable_path("/plain/ünïcødé-名前"), "/plain/ünïcødé-名前");
  EXPECT_EQ(printable_path("new\nline\ttab\\"), "new\\nline\\ttab\\\\");
  EXPECT_EQ(printable_path("bad-\xff\xfe"), "bad-\\xFF\\xFE");
  EXPECT_EQ(printable_path("\x01"), "\\x01");
  EXPECT_TRUE(is_valid_utf8("ünï"));
  EXPECT_FALSE(is_valid_utf8("\xc0\x80"));  // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));  // surrogate
}

TEST(TextReport, QuietPrintsTheSummaryLineOnly) {
  JobReport r;
  FilesystemReport fs;
  fs.fsid = "x";
  fs.before.shared_bytes = 100;
  fs.after.shared_bytes = 4196;
  // duperemove's number counts the newly shared bytes in every file holding them.
  fs.before.in_shared_extents = 200;
  fs.after.in_shared_extents = 8392;
  fs.deduped = true;
  r.filesystems.push_back(fs);
  JobOptions job;
  job.dedupe = true;
  TextReportOptions o;
  o.quiet = true;
  std::string err;
  const auto out = capture([&](std::FILE* f) {
    err = capture([&](std::FILE* e) { print_text_report(r, job, o, f, e); });
  });
  EXPECT_EQ(out, "Comparison of extent info shows a net change in shared extents of: 8192\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(r.net_shared_change(), 4096);
}

TEST(ExitCodes, ErrorsOutrankSkippedRanges) {
  JobReport r;
  EXPECT_EQ(r.exit_code(), 0);
  r.filesystems.emplace_back();
  r.filesystems[0].dedupe.ranges_changed = 1;
  EXPECT_EQ(r.exit_code(), 3);
  r.filesystems[0].dedupe.errors_by_code[EINVAL] = 1;
  r.filesystems[0].dedupe.ranges_failed = 1;
  EXPECT_EQ(r.exit_code(), 3);
  r.filesystems[0].dedupe.errors_by_code[ENOSPC] = 1;
  EXPECT_EQ(r.exit_code(), 1);
  r.filesystems[0].dedupe.errors_by_code.erase(ENOSPC);
  r.filesystems[0].fingerprints.read_errors = 1;
  EXPECT_EQ(r.exit_code(), 1);
  r.filesystems[0].fingerprints.read_errors = 0;
  r.path_errors.push_back("x");
  EXPECT_EQ(r.exit_code(), 1);
}

}  // namespace
}  // namespace btrdedupe
