#include "src/scope/subvolume_list.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "src/report/byte_size.h"
#include "src/catalog/catalog.h"
#include "src/report/subvolume_report.h"
#include "src/scope/subvolume_selection.h"
#include "src/report/text_report.h"

namespace btrdedupe {
namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

int fail(std::FILE* err, const std::string& message) {
  std::fprintf(err, "btrdedupe: %s\n", message.c_str());
  return 1;
}

using Generations = std::unordered_map<uint64_t, uint64_t>;  // subvolume -> generation

// The catalog, only to read: it must exist already and be of this filesystem. Its
// generations go to `scanned`; the error, if any, is returned.
std::optional<std::string> read_scanned_generations(const std::string& hashfile,
                                                    const std::string& fsid_now,
                                                    std::optional<Generations>& scanned) {
  struct stat st {};
  if (::stat(hashfile.c_str(), &st) != 0 || st.st_size == 0)
    return "hashfile " + hashfile + " does not exist or is empty";
  auto catalog = Catalog::open(hashfile);
  if (!catalog) return catalog.error().message();
  const auto fsid = (*catalog)->fsid();
  if (fsid && *fsid != fsid_now)
    return "hashfile " + hashfile + " is of another filesystem (" + *fsid + ")";
  scanned = (*catalog)->subvolume_generations();
  return std::nullopt;
}

// Every subvolume's tree, writable ones first so snapshots fold into them: metadata only,
// so no subvolume needs to be reachable through a mount (no file is opened).
btrfs::Result<ScanResult> scan_every_subvolume(const std::string& path,
                                               const std::vector<btrfs::Subvolume>& all,
                                               SubvolumeGround& ground) {
  std::vector<SubvolumeRoot> writable, readonly;
  for (const auto& s : all) (s.readonly ? readonly : writable).push_back({s.id, ""});
  writable.insert(writable.end(), readonly.begin(), readonly.end());
  ScanOptions scan_options;
  scan_options.keep_paths = false;
  scan_options.warm_csum_tree = false;  // counts only: no fingerprint follows
  return ground.scan(path, writable, scan_options);
}

std::optional<uint64_t> last_scanned(const std::optional<Generations>& scanned,
                                     const btrfs::Subvolume& s) {
  if (!scanned) return std::nullopt;
  auto it = scanned->find(s.id);
  if (it == scanned->end()) return std::nullopt;
  return it->second;
}

// What one listing covers: the filesystem, its subvolumes and what each holds.
struct SubvolumeListing {
  const std::string& path;
  const std::string& fsid;
  const std::vector<btrfs::Subvolume>& all;
  const std::map<uint64_t, SubvolumeUsage>& usage;
  const std::optional<Generations>& scanned;

  SubvolumeUsage usage_of(const btrfs::Subvolume& s) const {
    return usage.count(s.id) ? usage.at(s.id) : SubvolumeUsage{};
  }
};

void print_json_listing(const SubvolumeListing& l, const SubvolumeListOptions& options,
                        std::FILE* out) {
  using Json = nlohmann::ordered_json;
  Json list = Json::array();
  for (const auto& s : l.all) {
    const auto u = l.usage_of(s);
    Json j;
    j["id"] = s.id;
    j["path"] = subvolume_display_path(s);
    if (!is_valid_utf8(s.path)) {  // the exact bytes, as the run report gives them
      static const char* digits = "0123456789abcdef";
      std::string hex;
      for (unsigned char c : s.path) hex += {digits[c >> 4], digits[c & 15]};
      j["path_hex"] = hex;
    }
    j["readonly"] = s.readonly;
    const auto origin = snapshot_source(s, l.all);
    j["snapshot_of"] = origin.empty() ? Json(nullptr) : Json(origin);
    j["generation"] = s.generation;
    const auto last = last_scanned(l.scanned, s);
    j["last_scanned_generation"] = last ? Json(*last) : Json(nullptr);
    j["referenced_bytes"] = u.referenced;
    j["exclusive_bytes"] = u.exclusive;
    j["shared_bytes"] = u.referenced - u.exclusive;
    list.push_back(j);
  }
  Json doc{{"format", "btrdedupe-subvolumes"},
           {"format_version", 1},
           {"fsid", l.fsid},
           {"hashfile", options.hashfile.empty() ? Json(nullptr) : Json(options.hashfile)},
           {"subvolumes", list}};
  std::fputs((doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), out);
}

void print_text_listing(const SubvolumeListing& l, const SubvolumeListOptions& options,
                        std::FILE* out) {
  auto size = [&](uint64_t b) { return size_text(b, options.human); };
  std::fprintf(out, "Subvolumes of %s (filesystem %s): %zu; bytes on disk from a metadata scan "
               "(exclusive: referenced by no other subvolume)\n",
               printable_path(l.path).c_str(), l.fsid.c_str(), l.all.size());
  std::fprintf(out, "%8s %10s %-3s %12s %12s  %-26s %s\n", "ID", "GEN", "RO", "EXCLUSIVE",
               "SHARED", options.hashfile.empty() ? "LAST SCANNED (--hashfile)" : "LAST SCANNED",
               "PATH (SNAPSHOT OF)");
  for (const auto& s : l.all) {
    const auto u = l.usage_of(s);
    std::string last = "-";
    if (l.scanned) {
      const auto gen = last_scanned(l.scanned, s);
      last = !gen                    ? "never"
             : *gen == s.generation ? "gen " + std::to_string(*gen) + ", current"
                                    : "gen " + std::to_string(*gen) + ", changed since";
    }
    std::string name = printable_path(subvolume_display_path(s));
    const auto origin = snapshot_source(s, l.all);
    if (!origin.empty()) name += "  (snapshot of " + printable_path(origin) + ")";
    std::fprintf(out, "%8llu %10llu %-3s %12s %12s  %-26s %s\n", ull(s.id), ull(s.generation),
                 s.readonly ? "ro" : "-", size(u.exclusive).c_str(),
                 size(u.referenced - u.exclusive).c_str(), last.c_str(), name.c_str());
  }
}

}  // namespace

int list_subvolumes_command(const std::string& path, const SubvolumeListOptions& options,
                            std::FILE* out, std::FILE* err, SubvolumeGround& ground) {
  auto info = ground.fs_info(path);
  if (!info) return fail(err, info.error().message());
  auto all = ground.subvolumes(path);
  if (!all) return fail(err, all.error().message());
  std::optional<Generations> scanned;
  if (!options.hashfile.empty())
    if (auto error = read_scanned_generations(options.hashfile, info->fsid_string(), scanned))
      return fail(err, *error);
  auto scan = scan_every_subvolume(path, *all, ground);
  if (!scan) return fail(err, scan.error().message());
  const auto usage = subvolume_usage(*scan);
  const std::string fsid = info->fsid_string();
  const SubvolumeListing listing{path, fsid, *all, usage, scanned};
  if (options.json)
    print_json_listing(listing, options, out);
  else
    print_text_listing(listing, options, out);
  return 0;
}

}  // namespace btrdedupe
