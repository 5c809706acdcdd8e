// The --json document: its figures, and how it is written: in pieces, the listed groups one
// at a time as they are read back (spilled to disk by a windowed run), never whole in memory.
#include "src/report/json_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace
}  // namespace btrdedupe
