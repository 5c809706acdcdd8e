#include "src/report/json_report.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "src/dedupe/dedupe_engine.h"
#include "src/report/json_group_stream.h"
#include "src/report/json_group_text.h"
#include "src/report/text_report.h"

namespace btrdedupe {
namespace {

using Json = nlohmann::ordered_json;

// {"path": "..."} plus "path_hex" when the bytes are not UTF-8 (dump() replaces them).
void put_path(Json& j, const char* key, const std::string& path) {
  j[key] = path;
  if (!is_valid_utf8(path)) j[std::string(key) + "_hex"] = hex_bytes(path);
}

Json sharing(const SharingSummary& s) {
  return Json{{"logical_bytes", s.logical_bytes},
              {"unique_bytes", s.unique_bytes},
              {"shared_bytes", s.shared_bytes},
              {"physical_extents", s.physical_extents},
              {"allocated_bytes", s.allocated_bytes}};
}

Json seconds(const PhaseSeconds& s) {
  return Json{{"scan", s.scan},   {"fingerprint", s.fingerprint}, {"match", s.match},
              {"dedupe", s.dedupe}, {"confirm", s.confirm}};
}

Json strings(const std::vector<std::string>& v) {
  Json a = Json::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

Json errno_table(const std::map<int, uint64_t>& by_code) {
  Json a = Json::array();
  for (const auto& [code, ranges] : by_code) {
    const char* name = ::strerrorname_np(code);
    a.push_back(Json{{"errno", code},
                     {"name", name ? name : ""},
                     {"reason", dedupe_error_reason(code)},
                     {"ranges", ranges}});
  }
  return a;
}

// A time-boxed run's groups in the order they were queued (most valuable first): those
// finished, and those a stop left whole or in part for the next run. Every group is
// counted; the first kWorkListed of each kind are listed.
Json group_work(const std::vector<GroupWork>& groups) {
  Json a = Json::array();
  for (const auto& g : groups) {
    Json gj;
    put_path(gj, "source", g.source);
    gj["destinations"] = g.destinations;
    gj["bytes"] = g.bytes;
    gj["bytes_left"] = g.bytes_left;
    a.push_back(std::move(gj));
  }
  return a;
}

Json work(const WorkListing& w) {
  return Json{{"done", group_work(w.done)},     {"left", group_work(w.left)},
              {"groups_done", w.groups_done}, {"groups_left", w.groups_left},
              {"bytes_done", w.bytes_done},   {"bytes_left", w.bytes_left},
              {"listed_at_most", kWorkListed}};
}

Json json_roots(const std::vector<std::string>& paths) {
  Json roots = Json::array();
  for (const auto& p : paths) {
    Json root;
    put_path(root, "path", p);
    roots.push_back(root);
  }
  return roots;
}

Json json_scan_figures(const FilesystemReport& r) {
  const auto& p = r.passed_over;
  return Json{{"subvolumes", r.subvolumes},
              {"files", r.files},
              {"extents", r.extents},
              {"tree_items", r.tree_items},
              {"tree_searches", r.tree_searches},
              {"windows", r.windows},
              {"excluded", r.excluded},
              {"passed_over", Json{{"inline_extents", p.inline_extents},
                                   {"inline_bytes", p.inline_bytes},
                                   {"hole_extents", p.hole_extents},
                                   {"hole_bytes", p.hole_bytes},
                                   {"prealloc_extents", p.prealloc_extents},
                                   {"prealloc_bytes", p.prealloc_bytes},
                                   {"small_files", p.excluded_files},
                                   {"readonly_aliases", p.readonly_aliases},
                                   {"unreadable", p.unreadable},
                                   {"not_ours_files", p.not_ours_files}}}};
}

Json json_tally(const ExtentTally& t) { return Json{{"extents", t.extents}, {"bytes", t.bytes}}; }

Json json_plan_check(const PlanCheck& c) {
  return Json{{"planned", json_tally(c.planned)},
              {"freed", json_tally(c.freed)},
              {"kept", Json{{"used_as_source", json_tally(c.used_as_source)},
                            {"not_deduped", json_tally(c.not_deduped)},
                            {"remainder_kept", json_tally(c.remainder_kept)},
                            {"outside_scan", json_tally(c.outside_scan)}}},
              {"freed_unplanned", json_tally(c.freed_unplanned)}};
}

Json json_space_figures(const FilesystemReport& r) {
  return Json{{"allocated_before", r.before.allocated_bytes},
              {"allocated_after", r.after.allocated_bytes},
              {"freed_bytes", r.freed.bytes},
              {"freed_extents", r.freed.extents},
              {"would_free_bytes", r.would_free.bytes},
              {"would_free_extents", r.would_free.extents},
              {"destination_extents_before", r.destination_extents_before},
              {"destination_extents_after", r.destination_extents_after},
              {"plan_check", json_plan_check(r.plan_check)},
              {"freeing_runs", Json{{"groups", r.freeing_runs.groups},
                                    {"bytes", r.freeing_runs.bytes},
                                    {"extents", r.freeing_runs.extents},
                                    {"index_entries", r.freeing_runs.index_entries}}}};
}

Json json_fingerprint_figures(const FingerprintStats& f) {
  return Json{{"extents_from_csums", f.extents_from_csums},
              {"bytes_from_csums", f.bytes_from_csums},
              {"extents_read", f.extents_read},
              {"bytes_read", f.bytes_read},
              {"extents_from_twins", f.extents_from_twins},
              {"bytes_from_twins", f.bytes_from_twins},
              {"read_for", Json{{"twin_groups", f.read_for.twin_groups},
                                {"compressed_without_twin", f.read_for.compressed_without_twin},
                                {"twin_remainders", f.read_for.twin_remainders},
                                {"without_checksums", f.read_for.without_checksums}}},
              {"csum_searches", f.csum_searches},
              {"read_errors", f.read_errors},
              {"errors", strings(f.errors)}};
}

Json json_short_file_proofs(const ShortFileProofCounts& p) {
  return Json{{"files_read", p.files_read},
              {"bytes_read", p.bytes_read},
              {"files_known", p.files_known},
              {"files_unreadable", p.files_unreadable}};
}

Json json_duplicate_figures(const FilesystemReport& r) {
  return Json{{"whole_file_groups", r.whole_file_groups},
              {"partial_groups", r.partial_groups},
              {"planned_bytes", r.planned_bytes},
              {"planned_rounds", r.planned_rounds},
              {"readonly_ranges_left", r.readonly_ranges_left}};
}

Json json_dedupe_figures(const DedupeStats& d) {
  return Json{{"calls", d.calls},
              {"bytes_deduped", d.bytes_deduped},
              {"ranges_same", d.ranges_same},
              {"ranges_differ", d.ranges_differ},
              {"ranges_changed", d.ranges_changed},
              {"ranges_failed", d.ranges_failed},
              {"bytes_prefetched", d.bytes_prefetched},
              {"errors_by_code", errno_table(d.errors_by_code)},
              {"messages", strings(d.messages)},
              {"stopped", d.stopped},
              {"ranges_unequal", d.ranges_unequal},
              {"bytes_narrowed", d.bytes_narrowed},
              {"rounds_not_started", d.rounds_not_started},
              {"bytes_not_started", d.bytes_not_started}};
}

Json json_rewrite_figures(const RewriteStats& w) {
  return Json{{"planned_extents", w.planned_extents},
              {"planned_bytes", w.planned_bytes},
              {"skipped_for_budget", w.skipped_for_budget},
              {"bytes_skipped_for_budget", w.bytes_skipped_for_budget},
              {"extents_rewritten", w.extents_rewritten},
              {"ranges_rewritten", w.ranges_rewritten},
              {"bytes_written", w.bytes_written},
              {"disk_bytes_allocated", w.disk_bytes_allocated},
              {"extents_still_referenced", w.extents_still_referenced},
              {"ranges_fell_back", w.ranges_fell_back},
              {"fallback_reason", w.fallback_reason.empty() ? Json(nullptr)
                                                            : Json(w.fallback_reason)}};
}

Json json_catalog_figures(const CatalogStats& c) {
  return Json{{"unchanged", c.unchanged},
              {"files_changed", c.files_changed},
              {"files_known", c.files_known},
              {"candidates", c.candidates},
              {"stale_rows", c.stale_rows},
              {"incremental", c.incremental},
              {"upgraded_from", c.upgraded_from ? Json(*c.upgraded_from) : Json(nullptr)}};
}

Json json_per_subvolume(const FilesystemReport& r) {
  Json subvolumes = Json::array();
  for (const auto& s : r.per_subvolume) {
    Json sj;
    sj["id"] = s.id;
    put_path(sj, "path", s.path);
    sj["readonly"] = s.readonly;
    sj["snapshot_of"] = s.snapshot_of.empty() ? Json(nullptr) : Json(s.snapshot_of);
    sj["generation"] = s.generation;
    sj["exclusive_before"] = s.before.exclusive;
    sj["exclusive_after"] = s.after.exclusive;
    sj["referenced_before"] = s.before.referenced;
    sj["referenced_after"] = s.after.referenced;
    sj["planned_bytes"] = s.planned_bytes;
    sj["deduped_bytes"] = s.deduped_bytes;
    sj["freed_bytes"] = s.freed_bytes;
    sj["would_free_bytes"] = s.would_free_bytes;
    subvolumes.push_back(sj);
  }
  return subvolumes;
}

Json filesystem(const FilesystemReport& r, size_t index, bool groups_listed, bool time_boxed) {
  Json j;
  j["fsid"] = r.fsid;
  j["roots"] = json_roots(r.roots);
  j["error"] = r.error.empty() ? Json(nullptr) : Json(r.error);
  j["scan"] = json_scan_figures(r);
  j["before"] = sharing(r.before);
  j["after"] = sharing(r.after);
  j["space"] = json_space_figures(r);
  j["fingerprints"] = json_fingerprint_figures(r.fingerprints);
  j["duplicates"] = json_duplicate_figures(r);
  j["short_file_proofs"] = json_short_file_proofs(r.short_file_proofs);
  j["groups_listed"] = groups_listed;
  if (auto read = r.groups.for_each([](const GroupListing&) {}); !read && j["error"].is_null())
    j["error"] = read.error().message();  // found now: the groups are written after "error"
  j["groups"] = Json(groups_placeholder(index));
  j["dedupe"] = r.deduped ? json_dedupe_figures(r.dedupe) : Json(nullptr);
  j["rewrite"] = json_rewrite_figures(r.rewrite);
  j["catalog"] = r.catalog.used ? json_catalog_figures(r.catalog) : Json(nullptr);
  j["seconds"] = seconds(r.seconds);
  j["per_subvolume"] = json_per_subvolume(r);
  j["work"] = r.work.empty() && !time_boxed ? Json(nullptr) : work(r.work);
  return j;
}

Json json_options(const JobOptions& job, const JsonReportContext& c) {
  Json paths = Json::array();
  for (const auto& p : job.paths) {
    Json pj;
    put_path(pj, "path", p);
    paths.push_back(pj);
  }
  return Json{{"paths", paths},
              {"recursive", job.recursive},
              {"dedupe", job.dedupe},
              {"dry_run", c.dry_run},
              {"fdupes", c.fdupes},
              {"partial", job.partial},
              {"rewrite", job.rewrite_remainders},
              {"block_size", job.block_size},
              {"min_size", job.min_file_size},
              {"io_threads", job.io_threads},
              {"exclude", strings(c.exclude)},
              {"hashfile", job.hashfile.empty() ? Json(nullptr) : Json(job.hashfile)},
              {"subvolumes", Json{{"include", strings(job.subvolumes.include)},
                                  {"exclude", strings(job.subvolumes.exclude)},
                                  {"all", job.subvolumes.all}}},
              {"dedupe_readonly", job.dedupe_readonly}};
}

Json json_totals(const JobReport& report) {
  const RunTotals t = run_totals(report);
  return Json{{"filesystems", t.filesystems},
              {"subvolumes", t.subvolumes},
              {"files", t.files},
              {"extents", t.extents},
              {"excluded", t.excluded},
              {"logical_bytes", t.logical_bytes},
              {"already_shared_bytes", t.already_shared_bytes},
              {"bytes_from_csums", t.bytes_from_csums},
              {"bytes_read", t.bytes_read},
              {"bytes_from_twins", t.bytes_from_twins},
              {"short_file_proofs", json_short_file_proofs(t.short_file_proofs)},
              {"whole_file_groups", t.whole_file_groups},
              {"partial_groups", t.partial_groups},
              {"planned_bytes", t.planned_bytes},
              {"planned_rounds", t.planned_rounds},
              {"readonly_ranges_left", t.readonly_ranges_left},
              {"bytes_deduped", t.bytes_deduped},
              {"calls", t.calls},
              {"allocated_before", t.allocated_before},
              {"freed_bytes", t.freed_bytes},
              {"bytes_rewritten", t.bytes_rewritten},
              {"would_free_bytes", t.would_free_bytes},
              {"rounds_not_started", t.rounds_not_started},
              {"bytes_not_started", t.bytes_not_started},
              {"ranges_changed", t.ranges_changed},
              {"ranges_refused", t.ranges_refused},
              {"refused_by_code", errno_table(t.refused_by_code)},
              {"path_errors", t.path_errors},
              {"filesystem_errors", t.filesystem_errors},
              {"read_errors", t.read_errors},
              {"seconds", seconds(t.seconds)},
              {"total_seconds", t.total_seconds()},
              {"whole_scans_abandoned", report.whole_scans_abandoned},
              {"estimated_files", report.estimated_files}};
}

}  // namespace

void write_json_report(const JobReport& report, const JobOptions& job,
                       const JsonReportContext& c,
                       const std::function<void(std::string_view)>& out) {
  Json j;
  j["format"] = "btrdedupe-report";
  j["format_version"] = kJsonReportVersion;
  j["program"] = Json{{"name", "btrdedupe"}, {"version", BTRDEDUPE_VERSION}};
  j["options"] = json_options(job, c);
  Json filesystems = Json::array();
  for (size_t i = 0; i < report.filesystems.size(); ++i)
    filesystems.push_back(filesystem(report.filesystems[i], i, job.list_groups, c.max_runtime > 0));
  j["filesystems"] = filesystems;
  j["path_errors"] = strings(report.path_errors);
  j["notes"] = strings(report.notes);
  j["reader"] = report.reader;
  j["totals"] = json_totals(report);
  j["net_shared_change"] = report.net_shared_change();
  j["duperemove_net_change"] = report.duperemove_net_change();
  j["stopped"] = report.stopped;
  j["stopped_by"] = !report.stopped ? Json(nullptr)
                    : report.time_up ? Json("max_runtime")
                                     : Json("signal");
  j["max_runtime"] = c.max_runtime > 0 ? Json(c.max_runtime) : Json(nullptr);
  j["signal"] = c.signal ? Json(signal_name(c.signal)) : Json(nullptr);
  j["exit_code"] = c.exit_code;
  write_with_groups(j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n", report, out);
}

std::string json_report(const JobReport& report, const JobOptions& job,
                        const JsonReportContext& context) {
  std::string document;
  write_json_report(report, job, context, [&](std::string_view s) { document += s; });
  return document;
}

}  // namespace btrdedupe
