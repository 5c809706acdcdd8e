#include "src/text_report.h"

#include <string>

#include "src/byte_size.h"

namespace btrdedupe {
namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

class Printer {
 public:
  Printer(const TextReportOptions& o, std::FILE* out, std::FILE* err) : o_(o), out_(out), err_(err) {}

  std::string size(uint64_t bytes) const {
    return o_.human ? human_bytes(bytes) : std::to_string(bytes);
  }

  void filesystem(const FilesystemReport& r, const JobOptions& job) const {
    if (!o_.quiet) {
      std::string roots;
      for (const auto& p : r.roots) roots += (roots.empty() ? "" : ", ") + p;
      std::fprintf(out_, "Scanned %s: %llu subvolume(s), %llu files, %llu extents "
                   "(%llu tree items in %llu searches, %.2f s)\n",
                   roots.c_str(), ull(r.subvolumes), ull(r.files), ull(r.extents),
                   ull(r.tree_items), ull(r.tree_searches), r.seconds.scan);
      std::fprintf(out_, "  data in regular extents: %s logical, %s distinct on disk in %llu extents\n",
                   size(r.before.logical_bytes).c_str(), size(r.before.unique_bytes).c_str(),
                   ull(r.before.physical_extents));
      std::fprintf(out_, "  already shared (reflinks, snapshots; fingerprinted once): %s\n",
                   size(r.before.shared_bytes).c_str());
      const auto& p = r.passed_over;
      std::fprintf(out_, "  passed over: %llu inline extents (%s), %llu holes (%s), "
                   "%llu prealloc (%s), %llu small files, %llu read-only snapshot copies\n",
                   ull(p.inline_extents), size(p.inline_bytes).c_str(), ull(p.hole_extents),
                   size(p.hole_bytes).c_str(), ull(p.prealloc_extents),
                   size(p.prealloc_bytes).c_str(), ull(p.excluded_files),
                   ull(p.readonly_aliases));
    }
    if (!r.error.empty() && r.fsid.empty()) {
      std::fprintf(err_, "btrdedupe: %s\n", r.error.c_str());
      return;
    }
    const auto& f = r.fingerprints;
    if (!o_.quiet)
      std::fprintf(out_, "Fingerprinted %llu extents from the csum tree (%s, no data read) and "
                   "%llu by reading them (%s read) in %.2f s\n",
                   ull(f.extents_from_csums), size(f.bytes_from_csums).c_str(),
                   ull(f.extents_read), size(f.bytes_read).c_str(), r.seconds.fingerprint);
    for (const auto& e : f.errors) std::fprintf(err_, "btrdedupe: %s\n", e.c_str());
    if (!r.error.empty()) {
      std::fprintf(err_, "btrdedupe: %s\n", r.error.c_str());
      if (!r.deduped) return;
    }
    if (!o_.quiet) {
      std::fprintf(out_, "Found %llu whole-file and %llu partial duplicate groups: %s to dedupe",
                   ull(r.whole_file_groups), ull(r.partial_groups), size(r.planned_bytes).c_str());
      if (r.readonly_ranges_left)
        std::fprintf(out_, " (%llu ranges in read-only snapshots left as they are)",
                     ull(r.readonly_ranges_left));
      std::fprintf(out_, "\n");
      if (o_.list_groups) groups(r);
    }
    if (!r.deduped) return;
    const auto& d = r.dedupe;
    if (!o_.quiet) {
      std::fprintf(out_, "Deduped %s in %llu calls (%.2f s, %u threads): %llu ranges shared, "
                   "%llu differed, %llu changed since the scan, %llu refused\n",
                   size(d.bytes_deduped).c_str(), ull(d.calls), r.seconds.dedupe, job.io_threads,
                   ull(d.ranges_same), ull(d.ranges_differ), ull(d.ranges_changed),
                   ull(d.ranges_failed));
      std::fprintf(out_, "Data on disk for these files: %s before, %s after\n",
                   size(r.before.unique_bytes).c_str(), size(r.after.unique_bytes).c_str());
    }
    for (const auto& m : d.messages) std::fprintf(err_, "btrdedupe: %s\n", m.c_str());
  }

  void groups(const FilesystemReport& r) const {
    for (const auto& g : r.groups) {
      std::fprintf(out_, "%s %s, %zu ranges:\n", size(g.length).c_str(),
                   g.whole_file ? "whole files" : "range", g.members.size());
      for (const auto& m : g.members)
        std::fprintf(out_, "  %s\t%llu\t[layout %u]\n", m.path.c_str(), ull(m.offset), m.layout);
    }
  }

 private:
  const TextReportOptions& o_;
  std::FILE* out_;
  std::FILE* err_;
};

}  // namespace

void print_text_report(const JobReport& report, const JobOptions& job,
                       const TextReportOptions& options, std::FILE* out, std::FILE* err) {
  const Printer p(options, out, err);
  for (const auto& e : report.path_errors) std::fprintf(err, "btrdedupe: %s\n", e.c_str());
  for (const auto& fs : report.filesystems) p.filesystem(fs, job);
  if (job.dedupe)
    // Machine-read by scripts written for duperemove: same words, raw bytes.
    std::fprintf(out, "Comparison of extent info shows a net change in shared extents of: %lld\n",
                 static_cast<long long>(report.net_shared_change()));
}

}  // namespace btrdedupe
