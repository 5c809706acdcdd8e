// The one admission rule of every reader (src/scope/scan_admission.h).
#include "src/scope/scan_admission.h"

#include <gtest/gtest.h>

namespace btrdedupe {
namespace {

ScanOptions excluding(const std::string& prefix, uint64_t min_size = 0) {
  ScanOptions o;
  o.min_file_size = min_size;
  o.exclude = [prefix](const std::string&, const std::string& relative) {
    return relative.rfind(prefix, 0) == 0;
  };
  return o;
}

TEST(ScanAdmission, WithoutExcludesNoPathIsBuilt) {
  ScanOptions o;
  o.min_file_size = 4096;
  int asked = 0;
  auto path = [&](std::string&) { return ++asked, true; };
  EXPECT_EQ(admit_file(o, {"/r", false}, 4096, path), Admission::Taken);
  EXPECT_EQ(admit_file(o, {"/r", false}, 4095, path), Admission::Small);
  EXPECT_EQ(asked, 0);
}

TEST(ScanAdmission, ExclusionComesBeforeSize) {
  const auto o = excluding("skip/", 1000);
  auto at = [](const char* rel) { return [rel](std::string& p) { return p = rel, true; }; };
  EXPECT_EQ(admit_file(o, {"/r", false}, 10, at("skip/a")), Admission::Excluded);
  EXPECT_EQ(admit_file(o, {"/r", false}, 10, at("keep/a")), Admission::Small);
  EXPECT_EQ(admit_file(o, {"/r", false}, 5000, at("keep/a")), Admission::Taken);
}

TEST(ScanAdmission, AFileWithoutAPathIsExcludedWhenPatternsNeedOne) {
  const auto o = excluding("skip/");
  EXPECT_EQ(admit_file(o, {"/r", false}, 10, [](std::string&) { return false; }),
            Admission::Excluded);
}

TEST(ScanAdmission, ARootNamingOneFileIsNeverExcludedByPattern) {
  const auto o = excluding("");  // every path
  EXPECT_EQ(admit_file(o, {"/r/f", true}, 10, [](std::string& p) { return p = "", true; }),
            Admission::Taken);
}

TEST(ScanAdmission, SubvolumesAreLeftOutByIdOrPattern) {
  auto o = excluding("snaps/");
  o.excluded_subvolumes = {300};
  EXPECT_FALSE(admits_subvolume(o, 300, {"/r", false}, "data"));
  EXPECT_FALSE(admits_subvolume(o, 301, {"/r", false}, "snaps/1"));
  EXPECT_TRUE(admits_subvolume(o, 301, {"/r", false}, "data"));
}

TEST(ScanAdmission, LeftOutFilesAreCountedWhereReportsShowThem) {
  ScanResult out;
  count_left_out(Admission::Excluded, out);
  count_left_out(Admission::Small, out);
  count_left_out(Admission::Small, out);
  count_left_out(Admission::Taken, out);
  EXPECT_EQ(out.excluded, 1u);
  EXPECT_EQ(out.passed_over.excluded_files, 2u);
}

}  // namespace
}  // namespace btrdedupe
