// What the printers say of a whole run without root (run_job over an in-memory btrfs): the
// figures the text report, the JSON document and duperemove's summary line print are what
// the tree says the run did.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/catalog/catalog_commands.h"
#include "src/report/json_report.h"
#include "src/report/progress_sink.h"
#include "src/report/text_report.h"
#include "tests/unit/run_job_fixture.h"

namespace btrdedupe::test {
namespace {

// What print_text_report writes to its two streams.
struct Printed {
  std::string out, err;
};

// What `print` writes to its two streams.
template <class Print>
Printed printed(Print&& print) {
  char *out = nullptr, *err = nullptr;
  size_t out_size = 0, err_size = 0;
  std::FILE* o = ::open_memstream(&out, &out_size);
  std::FILE* e = ::open_memstream(&err, &err_size);
  print(o, e);
  std::fclose(o);
  std::fclose(e);
  Printed p{out, err};
  std::free(out);
  std::free(err);
  return p;
}

Printed print_text(const JobReport& report, const TextReportOptions& options) {
  return printed([&](std::FILE* o, std::FILE* e) {
    print_text_report(report, report.options, options, o, e);
  });
}

class RunJobReportTest : public RunJobTest {};

TEST_F(RunJobReportTest, TheTextReportSaysWhatTheTreeFreed) {
  write_pairs(2, 8);
  fs.write_file("other", content(900, 3));
  const uint64_t before = fs.referenced_bytes();
  JobOptions o = options();
  o.list_groups = true;
  const JobReport report = run(o);
  const uint64_t freed = before - fs.referenced_bytes();
  ASSERT_EQ(freed, 2 * 8 * kBlock);
  TextReportOptions t;
  t.list_groups = true;
  const Printed p = print_text(report, t);
  EXPECT_EQ(p.err, "");
  EXPECT_NE(p.out.find(std::to_string(freed) + " freed"), std::string::npos) << p.out;
  // Each group names its copies by path.
  EXPECT_NE(p.out.find(fs.root() + "/a0"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find(fs.root() + "/b1"), std::string::npos) << p.out;
  // duperemove's line counts the bytes newly shared in every file that holds them.
  EXPECT_EQ(report.duperemove_net_change(), static_cast<int64_t>(2 * freed));
  EXPECT_NE(p.out.find(summary_line(report)), std::string::npos);
}

TEST_F(RunJobReportTest, TheJsonReportSaysWhatTheTreeFreed) {
  write_pairs(1, 8);
  const uint64_t before = fs.referenced_bytes();
  const JobReport report = run(options());
  const uint64_t freed = before - fs.referenced_bytes();
  JsonReportContext c;
  c.exit_code = report.exit_code();
  const std::string doc = json_report(report, report.options, c);
  EXPECT_NE(doc.find("\"freed_bytes\": " + std::to_string(freed)), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"bytes_deduped\": " + std::to_string(8 * kBlock)), std::string::npos)
      << doc;
}

// A dedupe the kernel refused is an error line on the error stream, naming the file.
TEST_F(RunJobReportTest, ARefusedDedupeIsAnErrorLineNamingTheFile) {
  write_pairs(1, 8);
  fs.script = always(outcome(btrfs::DedupeStatus::Error, EIO));
  const JobReport report = run(options());
  EXPECT_EQ(report.exit_code(), 1);
  const Printed p = print_text(report, {});
  EXPECT_NE(p.err.find(fs.root() + "/"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("Input/output error"), std::string::npos) << p.err;
}

// -L, --stats and --history of a hashfile two runs wrote.
TEST_F(RunJobReportTest, AHashfileSaysWhatItsRunsFoundAndDid) {
  write_pairs(2, 8);
  fs.write_file("other", content(900, 3));
  JobOptions o = options();
  o.hashfile = hashfile();
  ASSERT_EQ(run(o).exit_code(), 0);
  fs.write_file("other-copy", content(900, 3));
  ASSERT_EQ(run(o).exit_code(), 0);

  const Printed list = printed([&](std::FILE* out, std::FILE* err) {
    EXPECT_EQ(list_catalog(hashfile(), false, out, err), 0);
  });
  EXPECT_NE(list.out.find("root: " + fs.root()), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("files: 6"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("runs: 2"), std::string::npos) << list.out;

  const Printed stats = printed([&](std::FILE* out, std::FILE* err) {
    EXPECT_EQ(catalog_stats(hashfile(), false, out, err), 0);
  });
  EXPECT_NE(stats.out.find("Files catalogued: 6"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find("Identical files: 3 groups; 3 files are copies"), std::string::npos)
      << stats.out;
  EXPECT_NE(stats.out.find("Deduped by the runs recorded: " +
                           std::to_string(2 * 8 * kBlock + 3 * kBlock)),
            std::string::npos)
      << stats.out;

  const Printed history = printed([&](std::FILE* out, std::FILE* err) {
    EXPECT_EQ(catalog_history(hashfile(), false, out, err), 0);
  });
  EXPECT_NE(history.out.find("5 files"), std::string::npos) << history.out;
  EXPECT_NE(history.out.find("deduped " + std::to_string(3 * kBlock)), std::string::npos)
      << history.out;
}

// A report in windows, in human units: how it was read, and what -d would do and free,
// figures the whole run's report would give.
TEST_F(RunJobReportTest, AWindowedReportSaysWhatADedupeWouldFree) {
  write_pairs(3, 8);
  JobOptions o = options(false);
  o.window_files = 2;
  const JobReport report = run(o);
  TextReportOptions t;
  t.human = t.debug = t.dry_run = true;
  const Printed p = print_text(report, t);
  EXPECT_EQ(p.err, "");
  for (const char* line :
       {"read, matched and deduped in 3 windows of 2 files (-B)",
        "Found 3 whole-file and 0 partial duplicate groups: 96.0 KiB to dedupe",
        "Dry run: -d would dedupe 96.0 KiB in 3 rounds; nothing was changed",
        "would free:     96.0 KiB of disk space with -d"})
    EXPECT_NE(p.out.find(line), std::string::npos) << line << "\n" << p.out;
  o.window_files = 0;
  const JobReport whole = run(o);
  EXPECT_EQ(whole.filesystems[0].would_free.bytes, report.filesystems[0].would_free.bytes);
  EXPECT_EQ(whole.filesystems[0].planned_bytes, report.filesystems[0].planned_bytes);
}

// A sink that only hears of phases (ProgressSink::position left as it is): each phase in
// the run's order, the dedupe's bytes counted up to what it deduped.
class PhaseLog : public ProgressSink {
 public:
  void progress(const char* phase, uint64_t done, uint64_t) override {
    if (phases.empty() || phases.back() != phase) phases.push_back(phase);
    if (std::string(phase) == "dedupe") dedupe_done = done;
  }
  std::vector<std::string> phases;
  uint64_t dedupe_done = 0;
};

TEST_F(RunJobReportTest, AProgressSinkHearsThePhasesInTheirOrder) {
  write_pairs(2, 8);
  PhaseLog log;
  const JobReport report = run_job(options(), &log, fs);
  ASSERT_EQ(report.exit_code(), 0);
  const std::vector<std::string> order{"scan", "fingerprint", "match", "dedupe"};
  auto at = log.phases.begin();
  for (const auto& phase : order) {
    at = std::find(at, log.phases.end(), phase);
    EXPECT_NE(at, log.phases.end()) << phase << " missing or out of order";
  }
  EXPECT_EQ(log.phases.front(), "scan");
  EXPECT_EQ(log.dedupe_done, report.filesystems.at(0).dedupe.bytes_deduped);
  EXPECT_EQ(log.dedupe_done, 2 * 8 * kBlock);
}

}  // namespace
}  // namespace btrdedupe::test
