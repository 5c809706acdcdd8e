// The human-readable report of a run, and duperemove's machine-read summary line.
#pragma once

#include <cstdio>

#include "src/job.h"

namespace btrdedupe {

struct TextReportOptions {
  bool human = false;   // sizes as 1.5 MiB instead of raw bytes
  bool quiet = false;   // only errors and the summary line
  bool list_groups = false;
};

// Writes the report to `out` and every error or skipped range to `err`.
void print_text_report(const JobReport& report, const JobOptions& job,
                       const TextReportOptions& options, std::FILE* out, std::FILE* err);

}  // namespace btrdedupe
