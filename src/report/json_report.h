// The report of a run as one JSON document (--json). Field names are stable and documented
// in docs/json-report.md; docs/json-report.schema.json is its JSON Schema.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "src/report/job_report.h"

namespace btrdedupe {

inline constexpr int kJsonReportVersion = 1;

struct JsonReportContext {
  bool dry_run = false;
  bool fdupes = false;
  std::vector<std::string> exclude;
  int signal = 0;       // the run was stopped by this signal (0: not stopped)
  int exit_code = 0;    // what the program exits with
  double max_runtime = 0;  // --max-runtime in seconds (0: none)
};

// The whole document, pretty-printed, ending in a newline, handed to `out` piece by piece:
// the listed groups are read back and written one at a time, so the document never sits in
// memory whole (a listing of millions of members would be gigabytes of JSON). Strings are
// UTF-8: bytes of a path that are not valid UTF-8 become U+FFFD, and the exact bytes are
// given in hex beside it.
void write_json_report(const JobReport& report, const JobOptions& job,
                       const JsonReportContext& context,
                       const std::function<void(std::string_view)>& out);

// The same document as one string (small reports, tests).
std::string json_report(const JobReport& report, const JobOptions& job,
                        const JsonReportContext& context);

}  // namespace btrdedupe
