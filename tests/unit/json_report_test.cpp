// The --json document: its figures, and how it is written: in pieces, the listed groups one
// at a time as they are read back (spilled to disk by a windowed run), never whole in memory.
#include "src/report/json_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <nlohmann/json.hpp>
#include <string>

#include "src/report/text_report.h"
#include "support/captured_output.h"

namespace btrdedupe {
namespace {

GroupListing listing(uint64_t length, const std::string& a, const std::string& b) {
  GroupListing g;
  g.length = length;
  g.whole_file = true;
  g.members.push_back({a, 0, 0, true, false});
  g.members.push_back({b, length, 1, false, true});
  return g;
}

struct WrittenDocument {
  std::string text;
  size_t pieces = 0;
  size_t largest_piece = 0;
};

WrittenDocument write(const JobReport& report, const JobOptions& job) {
  WrittenDocument d;
  write_json_report(report, job, {}, [&](std::string_view s) {
    d.text += s;
    ++d.pieces;
    d.largest_piece = std::max(d.largest_piece, s.size());
  });
  return d;
}

TEST(JsonReport, CarriesEveryFigureAndNonUtf8Paths) {
  JobReport r;
  FilesystemReport fs;
  fs.fsid = "f";
  fs.roots = {"/m"};
  fs.files = 3;
  fs.deduped = true;
  fs.dedupe.errors_by_code[EPERM] = 2;
  fs.dedupe.ranges_failed = 2;
  GroupListing g;
  g.length = 4096;
  g.members.push_back({"odd-\xff", 0, 0, true, false});
  g.members.push_back({"copy", 0, 1, false, true});
  ASSERT_TRUE(fs.groups.add(g));
  r.filesystems.push_back(fs);
  JobOptions job;
  job.paths = {"/m"};
  job.list_groups = true;
  JsonReportContext c;
  c.exit_code = r.exit_code();
  const auto j = nlohmann::json::parse(json_report(r, job, c));
  EXPECT_EQ(j["format"], "btrdedupe-report");
  EXPECT_EQ(j["format_version"], kJsonReportVersion);
  EXPECT_EQ(j["exit_code"], 3);  // EPERM: refused for what the file is
  EXPECT_EQ(j["totals"]["files"], 3);
  EXPECT_EQ(j["totals"]["refused_by_code"][0]["name"], "EPERM");
  const auto& m = j["filesystems"][0]["groups"][0]["members"];
  EXPECT_EQ(m[0]["path"], "odd-\xef\xbf\xbd");  // U+FFFD
  EXPECT_EQ(m[0]["path_hex"], "6f64642dff");
  EXPECT_EQ(m[0]["role"], "source");
  EXPECT_EQ(m[1]["role"], "destination");
  EXPECT_FALSE(m[1].contains("path_hex"));
  EXPECT_TRUE(j["signal"].is_null());
}

TEST(JsonReport, GroupsAreWrittenOneAtATimeInTheDocumentsOwnLayout) {
  JobReport report;
  FilesystemReport first;
  ASSERT_TRUE(first.groups.add(listing(4096, "kept/in memory", "copy")));
  ASSERT_TRUE(first.groups.spill_to_disk());
  for (uint64_t i = 0; i < 500; ++i)
    ASSERT_TRUE(first.groups.add(listing(8192 + i, "spilled/" + std::to_string(i), "b")));
  // The placeholder's own text as a path: only the key "groups" marks a placeholder.
  ASSERT_TRUE(first.groups.add(listing(1, "\x01groups of filesystem 1", "not utf-8 \xff")));
  // What the writer must escape as dump() does, a partial group, a member the plan leaves
  // as it is, and a group without members.
  GroupListing odd = listing(7, "quote \" back\\slash\ttab\nnewline \x7f \x01\x1f\b\f\r", "caf\xc3\xa9/\xe2\x82\xac");
  odd.whole_file = false;
  odd.members.push_back({"unchanged one", 3, 2, false, false});
  ASSERT_TRUE(first.groups.add(odd));
  ASSERT_TRUE(first.groups.add(GroupListing{}));
  report.filesystems.push_back(first);
  report.filesystems.emplace_back();  // a second filesystem that lists no group
  FilesystemReport third;
  ASSERT_TRUE(third.groups.add(listing(12, "third", "fs")));
  report.filesystems.push_back(third);
  JobOptions job;
  job.paths = {"/m"};
  job.list_groups = true;

  const auto d = write(report, job);
  const auto j = nlohmann::ordered_json::parse(d.text);
  // Byte for byte what one pretty-printed document would be.
  EXPECT_EQ(j.dump(2) + "\n", d.text);
  EXPECT_EQ(d.text, json_report(report, job, {}));
  const auto& groups = j["filesystems"][0]["groups"];
  ASSERT_EQ(groups.size(), 504u);
  EXPECT_EQ(groups[0]["members"][0]["path"], "kept/in memory");
  // The spilled ones come largest length first (GroupListings::for_each).
  EXPECT_EQ(groups[1]["members"][0]["path"], "spilled/499");
  EXPECT_EQ(groups[1]["length"], 8192 + 499);
  EXPECT_EQ(groups[500]["members"][0]["path"], "spilled/0");
  EXPECT_EQ(groups[501]["members"][0]["path"], "quote \" back\\slash\ttab\nnewline \x7f \x01\x1f\b\f\r");
  EXPECT_EQ(groups[501]["whole_file"], false);
  EXPECT_EQ(groups[501]["members"][2]["role"], "unchanged");
  EXPECT_EQ(groups[502]["members"][0]["path"], "\x01groups of filesystem 1");
  EXPECT_EQ(groups[502]["members"][1]["path_hex"], "6e6f74207574662d3820ff");
  EXPECT_EQ(groups[502]["members"][1]["role"], "destination");
  EXPECT_TRUE(groups[503]["members"].empty());
  EXPECT_TRUE(j["filesystems"][0]["error"].is_null());
  EXPECT_TRUE(j["filesystems"][1]["groups"].is_array());
  EXPECT_TRUE(j["filesystems"][1]["groups"].empty());
  EXPECT_EQ(j["filesystems"][2]["groups"][0]["members"][1]["path"], "fs");
  // No piece holds more than a group or the figures around them.
  EXPECT_GT(d.pieces, 505u);
  EXPECT_LT(d.largest_piece, d.text.size() / 20);
}

TEST(JsonReport, ADocumentWithoutFilesystemsIsOnePiece) {
  JobReport report;
  report.path_errors.push_back("/nowhere: No such file or directory");
  const auto d = write(report, {});
  EXPECT_EQ(d.pieces, 1u);
  const auto j = nlohmann::json::parse(d.text);
  EXPECT_TRUE(j["filesystems"].empty());
  EXPECT_EQ(j["path_errors"][0], "/nowhere: No such file or directory");
}

// Data read to prove one-sector files equal is reported beside the fingerprints' reads,
// per filesystem and summed.
TEST(JsonReport, ShortFileProofsArePerFilesystemAndSummed) {
  JobReport report;
  report.filesystems.resize(2);
  report.filesystems[0].short_file_proofs = {3, 9000, 2, 1};
  report.filesystems[1].short_file_proofs = {1, 4096, 0, 0};
  const auto j = nlohmann::json::parse(json_report(report, {}, {}));
  const auto& first = j["filesystems"][0]["short_file_proofs"];
  EXPECT_EQ(first["files_read"], 3);
  EXPECT_EQ(first["bytes_read"], 9000);
  EXPECT_EQ(first["files_known"], 2);
  EXPECT_EQ(first["files_unreadable"], 1);
  const auto& total = j["totals"]["short_file_proofs"];
  EXPECT_EQ(total["files_read"], 4);
  EXPECT_EQ(total["bytes_read"], 13096);
  EXPECT_EQ(total["files_known"], 2);
  EXPECT_EQ(total["files_unreadable"], 1);

  const std::string text =
      capture([&](std::FILE* out) { print_text_report(report, {}, {}, out, stderr); });
  EXPECT_NE(text.find("; one-sector files proven by their data: 4 read (13096), 2 known\n"),
            std::string::npos)
      << text;
}

// A time-boxed run lists its groups done and left, and says the deadline stopped it.
TEST(JsonReport, ATimeBoxedRunListsItsWorkAndWhatStoppedIt) {
  JobReport report;
  FilesystemReport fs;
  fs.work.done.push_back({"/m/done-source", 2, 8192, 0});
  fs.work.left.push_back({"/m/left-\xff", 3, 12288, 4096});
  fs.work.groups_done = 5;
  fs.work.groups_left = 7;
  fs.work.bytes_done = 40960;
  fs.work.bytes_left = 28672;
  report.filesystems.push_back(fs);
  report.filesystems.emplace_back();  // nothing of its own to list
  report.stopped = true;
  report.time_up = true;
  JsonReportContext c;
  c.max_runtime = 30;
  const auto j = nlohmann::json::parse(json_report(report, {}, c));
  const auto& w = j["filesystems"][0]["work"];
  EXPECT_EQ(w["groups_done"], 5);
  EXPECT_EQ(w["groups_left"], 7);
  EXPECT_EQ(w["bytes_done"], 40960);
  EXPECT_EQ(w["bytes_left"], 28672);
  EXPECT_EQ(w["listed_at_most"], kWorkListed);
  ASSERT_EQ(w["done"].size(), 1u);
  EXPECT_EQ(w["done"][0]["source"], "/m/done-source");
  EXPECT_EQ(w["done"][0]["destinations"], 2);
  EXPECT_EQ(w["done"][0]["bytes"], 8192);
  EXPECT_EQ(w["done"][0]["bytes_left"], 0);
  EXPECT_FALSE(w["done"][0].contains("source_hex"));
  ASSERT_EQ(w["left"].size(), 1u);
  EXPECT_EQ(w["left"][0]["source_hex"], "2f6d2f6c6566742dff");
  EXPECT_EQ(w["left"][0]["bytes_left"], 4096);
  // Time-boxed: the second filesystem's listing is there, empty.
  const auto& none = j["filesystems"][1]["work"];
  EXPECT_EQ(none["groups_done"], 0);
  EXPECT_TRUE(none["done"].empty());
  EXPECT_TRUE(none["left"].empty());
  EXPECT_EQ(j["stopped_by"], "max_runtime");
  EXPECT_EQ(j["max_runtime"], 30.0);

  // Stopped otherwise: by a signal; not time-boxed, an empty listing is null.
  report.time_up = false;
  JsonReportContext signalled;
  signalled.signal = SIGINT;
  const auto k = nlohmann::json::parse(json_report(report, {}, signalled));
  EXPECT_EQ(k["stopped_by"], "signal");
  EXPECT_EQ(k["signal"], "SIGINT");
  EXPECT_TRUE(k["max_runtime"].is_null());
  EXPECT_TRUE(k["filesystems"][1]["work"].is_null());
  EXPECT_EQ(k["filesystems"][0]["work"]["groups_left"], 7);
}

// What the hashfile saved, only where there was one.
TEST(JsonReport, CatalogFiguresOnlyWithAHashfile) {
  JobReport report;
  report.filesystems.resize(2);
  CatalogStats& c = report.filesystems[0].catalog;
  c.used = true;
  c.files_changed = 11;
  c.files_known = 13;
  c.candidates = 17;
  c.stale_rows = 19;
  c.incremental = true;
  c.upgraded_from = 2;
  const auto j = nlohmann::json::parse(json_report(report, {}, {}));
  const auto& cj = j["filesystems"][0]["catalog"];
  EXPECT_EQ(cj["unchanged"], false);
  EXPECT_EQ(cj["files_changed"], 11);
  EXPECT_EQ(cj["files_known"], 13);
  EXPECT_EQ(cj["candidates"], 17);
  EXPECT_EQ(cj["stale_rows"], 19);
  EXPECT_EQ(cj["incremental"], true);
  EXPECT_EQ(cj["upgraded_from"], 2);
  EXPECT_TRUE(j["filesystems"][1]["catalog"].is_null());
  EXPECT_TRUE(j["stopped_by"].is_null());

  c.upgraded_from.reset();
  c.unchanged = true;
  const auto k = nlohmann::json::parse(json_report(report, {}, {}));
  EXPECT_TRUE(k["filesystems"][0]["catalog"]["upgraded_from"].is_null());
  EXPECT_EQ(k["filesystems"][0]["catalog"]["unchanged"], true);
}

}  // namespace
}  // namespace btrdedupe
