// The text report's closing block; its contract: src/report/text_summary.h.
#include "src/report/text_summary.h"

#include <cstring>
#include <string>
#include <vector>

#include "src/dedupe/dedupe_engine.h"
#include "src/report/byte_size.h"
#include "src/report/run_totals.h"

namespace btrdedupe {
namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

const char* strerrorname(int code) {
  const char* n = ::strerrorname_np(code);
  return n ? n : "?";
}

class SummaryPrinter {
 public:
  SummaryPrinter(const JobReport& report, const JobOptions& job, const TextReportOptions& o,
                 const ReaderWords& words, std::FILE* out)
      : report_(report), job_(job), o_(o), words_(words), out_(out), t_(run_totals(report)) {}

  void print() const {
    std::fprintf(out_, "Summary:\n");
    found();
    outcome();
    errors();
    time();
  }

 private:
  std::string size(uint64_t bytes) const { return size_text(bytes, o_.human); }

  std::string signed_size(int64_t bytes) const {
    return bytes < 0 ? "-" + size(static_cast<uint64_t>(-bytes)) : size(static_cast<uint64_t>(bytes));
  }

  // What was scanned and fingerprinted, and the duplicates found.
  void found() const {
    std::fprintf(out_, "  scanned:        %llu files, %llu extents in %llu subvolume(s) of %llu "
                 "filesystem(s)",
                 ull(t_.files), ull(t_.extents), ull(t_.subvolumes), ull(t_.filesystems));
    if (t_.excluded) std::fprintf(out_, "; %llu excluded", ull(t_.excluded));
    std::fprintf(out_, "\n  already shared: %s of %s\n", size(t_.already_shared_bytes).c_str(),
                 size(t_.logical_bytes).c_str());
    std::fprintf(out_, "  fingerprints:   %llu extents from the csum tree, %llu read (%s read)",
                 ull(t_.extents_from_csums), ull(t_.extents_read), size(t_.bytes_read).c_str());
    if (t_.extents_from_twins)
      std::fprintf(out_, ", %llu from compressed twins", ull(t_.extents_from_twins));
    const ShortFileProofCounts& p = t_.short_file_proofs;
    if (p.files_read || p.files_known)  // their sums alone cannot tell equal files apart
      std::fprintf(out_, "; one-sector files proven by their data: %llu read (%s), %llu known",
                   ull(p.files_read), size(p.bytes_read).c_str(), ull(p.files_known));
    std::fputc('\n', out_);
    std::fprintf(out_, "  duplicates:     %llu whole-file and %llu partial groups, %s to dedupe\n",
                 ull(t_.whole_file_groups), ull(t_.partial_groups), size(t_.planned_bytes).c_str());
  }

  // What was deduped and freed (or would be with -d), and the ranges left alone.
  void outcome() const {
    if (job_.dedupe)
      std::fprintf(out_, "  deduped:        %s in %llu calls; newly shared %s (each byte once; "
                   "%s in shared extents counted in every file, the line below)\n",
                   size(t_.bytes_deduped).c_str(), ull(t_.calls),
                   signed_size(report_.net_shared_change()).c_str(),
                   signed_size(report_.duperemove_net_change()).c_str());
    else
      std::fprintf(out_, "  deduped:        nothing (%s)\n", o_.dry_run ? "--dry-run" : "no -d");
    if (job_.dedupe)
      std::fprintf(out_, "  freed:          %s of disk space (%s)\n", size(t_.freed_bytes).c_str(),
                   words_.freed_as);
    else
      std::fprintf(out_, "  would free:     %s of disk space with -d\n",
                   size(t_.would_free_bytes).c_str());
    std::fprintf(out_, "  left alone:     %llu ranges changed since the scan, %llu refused by the "
                 "kernel",
                 ull(t_.ranges_changed), ull(t_.ranges_refused));
    for (const auto& [code, n] : t_.refused_by_code)
      std::fprintf(out_, "; %llu %s (%s)", ull(n), dedupe_error_reason(code).c_str(),
                   strerrorname(code));
    if (t_.readonly_ranges_left)
      std::fprintf(out_, "; %llu in read-only snapshots (by design)", ull(t_.readonly_ranges_left));
  }

  // The error counts, and the first few messages of each kind as the engine worded them.
  void errors() const {
    std::fprintf(out_, "\n  errors:         %llu paths not scanned, %llu filesystems failed, "
                 "%llu read errors\n",
                 ull(t_.path_errors), ull(t_.filesystem_errors), ull(t_.read_errors));
    std::vector<std::string> first;
    for (const auto& e : report_.path_errors) first.push_back(e);
    for (const auto& fs : report_.filesystems) {
      if (!fs.error.empty()) first.push_back(fs.error);
      for (const auto& e : fs.fingerprints.errors) first.push_back(e);
      for (const auto& m : fs.dedupe.messages) first.push_back(m);
    }
    constexpr size_t kFirst = 5;
    for (size_t i = 0; i < first.size() && i < kFirst; ++i)
      std::fprintf(out_, "    %s\n", first[i].c_str());
    if (first.size() > kFirst)
      std::fprintf(out_, "    ... %zu more on stderr\n", first.size() - kFirst);
  }

  // The time by phase, and what stopped the run.
  void time() const {
    const auto& s = t_.seconds;
    std::fprintf(out_, "  elapsed:        %.2f s (scan %.2f, fingerprint %.2f, match %.2f, "
                 "dedupe %.2f, confirm %.2f, between %.2f)",
                 t_.total_seconds(), s.scan, s.fingerprint, s.match, s.dedupe, s.confirm,
                 t_.other_seconds());
    if (report_.whole_scans_abandoned)  // where most of "between" went
      std::fprintf(out_, "; a whole read, given up past %llu files for windows, is between",
                   ull(job_.whole_run_files));
    std::fprintf(out_, "\n");
    if (report_.time_up)
      std::fprintf(out_, "  stopped:        at --max-runtime, after the dedupe rounds under way; "
                   "%s in %llu rounds left for the next run\n",
                   size(t_.bytes_not_started).c_str(), ull(t_.rounds_not_started));
    else if (o_.signal)
      std::fprintf(out_, "  stopped:        on %s, after the dedupe rounds under way\n",
                   signal_name(o_.signal).c_str());
  }

  const JobReport& report_;
  const JobOptions& job_;
  const TextReportOptions& o_;
  const ReaderWords& words_;
  std::FILE* out_;
  const RunTotals t_;
};

}  // namespace

void print_text_summary(const JobReport& report, const JobOptions& job,
                        const TextReportOptions& options, const ReaderWords& words,
                        std::FILE* out) {
  SummaryPrinter(report, job, options, words, out).print();
}

}  // namespace btrdedupe
