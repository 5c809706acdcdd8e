// The listed groups of each filesystem in the --json document, written one group at a time
// as they are read back instead of held as JSON: a listing of a few million members would
// take gigabytes so.
//
// The contract between the two halves: the document is built with groups_placeholder(i) as
// the value of filesystem i's "groups", and dumped whole with dump(2); write_with_groups
// then writes that text with each placeholder replaced by filesystem i's listing, laid out
// as dump(2) would at that indent. The key "groups" holds a string nowhere else in the
// document, so a placeholder cannot be confused with a path. A listing that fails to read
// back ends early: the document's builder must have put that error in the filesystem's
// "error" already.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "src/report/job_report.h"

namespace btrdedupe {

// The string that stands in for filesystem i's "groups" in the document.
std::string groups_placeholder(size_t i);

// `dumped` (the document as dump(2) printed it) to `out`, with each filesystem's placeholder
// replaced by its groups.
void write_with_groups(const std::string& dumped, const JobReport& report,
                       const std::function<void(std::string_view)>& out);

}  // namespace btrdedupe
