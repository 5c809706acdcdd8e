// The "Summary:" block that closes the text report: the run's figures summed over its
// filesystems (src/report/run_totals.h), what was deduped or would be, what was left alone
// and why, the error counts with the first few messages, the time by phase, and what
// stopped the run. Internal to the text report (src/report/text_report.cpp), which prints
// it after the filesystems' sections unless -q; apart from them because it reads the whole
// JobReport and prints nothing of one filesystem alone. Writes to `out` only: each error
// went to stderr in full with its filesystem's section.
#pragma once

#include <cstdio>

#include "src/report/job_report.h"
#include "src/report/reader_words.h"
#include "src/report/text_report.h"

namespace btrdedupe {

void print_text_summary(const JobReport& report, const JobOptions& job,
                        const TextReportOptions& options, const ReaderWords& words,
                        std::FILE* out);

}  // namespace btrdedupe
