// The human-readable report of a run, and duperemove's machine-read summary line.
#pragma once

#include <cstdio>
#include <string>

#include "src/report/job_report.h"
#include "src/report/printable_path.h"  // printable_path, is_valid_utf8: reached through here too
#include "src/report/run_totals.h"  // RunTotals, run_totals: likewise

namespace btrdedupe {

struct TextReportOptions {
  bool human = false;     // sizes as 1.5 MiB instead of raw bytes
  bool quiet = false;     // only errors and the summary line
  bool list_groups = false;
  bool debug = false;     // internal counters too
  bool dry_run = false;   // say what -d would have done
  int signal = 0;         // the run was stopped by this signal
  bool errors_only = false;  // only the error lines on `err` (--json prints the rest)
};

// The duperemove summary line (with its newline).
std::string summary_line(const JobReport& report);

// Writes the report to `out` and every error or skipped range to `err`.
void print_text_report(const JobReport& report, const JobOptions& job,
                       const TextReportOptions& options, std::FILE* out, std::FILE* err);

}  // namespace btrdedupe
