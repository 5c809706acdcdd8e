#include "src/subvolume_list.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "src/byte_size.h"
#include "src/catalog.h"
#include "src/subvolume_report.h"
#include "src/subvolume_selection.h"
#include "src/text_report.h"

namespace btrdedupe {
namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

int fail(std::FILE* err, const std::string& message) {
  std::fprintf(err, "btrdedupe: %s\n", message.c_str());
  return 1;
}

}  // namespace

int list_subvolumes_command(const std::string& path, const SubvolumeListOptions& options,
                            std::FILE* out, std::FILE* err) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fail(err, fd.error().message());
  if (auto ok = btrfs::check_is_btrfs(fd->get(), path); !ok) return fail(err, ok.error().message());
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return fail(err, info.error().message());
  auto all = btrfs::list_subvolumes(path);
  if (!all) return fail(err, all.error().message());

  // The catalog, only to read: it must exist already and be of this filesystem.
  std::optional<std::unordered_map<uint64_t, uint64_t>> scanned;
  if (!options.hashfile.empty()) {
    struct stat st {};
    if (::stat(options.hashfile.c_str(), &st) != 0 || st.st_size == 0)
      return fail(err, "hashfile " + options.hashfile + " does not exist or is empty");
    auto catalog = Catalog::open(options.hashfile);
    if (!catalog) return fail(err, catalog.error().message());
    const auto fsid = (*catalog)->fsid();
    if (fsid && *fsid != info->fsid_string())
      return fail(err, "hashfile " + options.hashfile + " is of another filesystem (" + *fsid + ")");
    scanned = (*catalog)->subvolume_generations();
  }

  // Every subvolume's tree, writable ones first so snapshots fold into them: metadata only,
  // so no subvolume needs to be reachable through a mount (no file is opened).
  std::vector<SubvolumeRoot> writable, readonly;
  for (const auto& s : *all) (s.readonly ? readonly : writable).push_back({s.id, ""});
  writable.insert(writable.end(), readonly.begin(), readonly.end());
  ScanOptions scan_options;
  scan_options.keep_paths = false;
  scan_options.warm_csum_tree = false;  // counts only: no fingerprint follows
  auto scan = scan_subvolumes(path, writable, scan_options);
  if (!scan) return fail(err, scan.error().message());
  const auto usage = subvolume_usage(*scan);

  auto last_scanned = [&](const btrfs::Subvolume& s) -> std::optional<uint64_t> {
    if (!scanned) return std::nullopt;
    auto it = scanned->find(s.id);
    if (it == scanned->end()) return std::nullopt;
    return it->second;
  };
  auto size = [&](uint64_t b) { return options.human ? human_bytes(b) : std::to_string(b); };

  if (options.json) {
    using Json = nlohmann::ordered_json;
    Json list = Json::array();
    for (const auto& s : *all) {
      const auto u = usage.count(s.id) ? usage.at(s.id) : SubvolumeUsage{};
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
      const auto origin = snapshot_source(s, *all);
      j["snapshot_of"] = origin.empty() ? Json(nullptr) : Json(origin);
      j["generation"] = s.generation;
      const auto last = last_scanned(s);
      j["last_scanned_generation"] = last ? Json(*last) : Json(nullptr);
      j["referenced_bytes"] = u.referenced;
      j["exclusive_bytes"] = u.exclusive;
      j["shared_bytes"] = u.referenced - u.exclusive;
      list.push_back(j);
    }
    Json doc{{"format", "btrdedupe-subvolumes"},
             {"format_version", 1},
             {"fsid", info->fsid_string()},
             {"hashfile", options.hashfile.empty() ? Json(nullptr) : Json(options.hashfile)},
             {"subvolumes", list}};
    std::fputs((doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n").c_str(), out);
    return 0;
  }

  std::fprintf(out, "Subvolumes of %s (filesystem %s): %zu; bytes on disk from a metadata scan "
               "(exclusive: referenced by no other subvolume)\n",
               printable_path(path).c_str(), info->fsid_string().c_str(), all->size());
  std::fprintf(out, "%8s %10s %-3s %12s %12s  %-26s %s\n", "ID", "GEN", "RO", "EXCLUSIVE",
               "SHARED", options.hashfile.empty() ? "LAST SCANNED (--hashfile)" : "LAST SCANNED",
               "PATH (SNAPSHOT OF)");
  for (const auto& s : *all) {
    const auto u = usage.count(s.id) ? usage.at(s.id) : SubvolumeUsage{};
    std::string last = "-";
    if (scanned) {
      const auto gen = last_scanned(s);
      last = !gen                    ? "never"
             : *gen == s.generation ? "gen " + std::to_string(*gen) + ", current"
                                    : "gen " + std::to_string(*gen) + ", changed since";
    }
    std::string name = printable_path(subvolume_display_path(s));
    const auto origin = snapshot_source(s, *all);
    if (!origin.empty()) name += "  (snapshot of " + printable_path(origin) + ")";
    std::fprintf(out, "%8llu %10llu %-3s %12s %12s  %-26s %s\n", ull(s.id), ull(s.generation),
                 s.readonly ? "ro" : "-", size(u.exclusive).c_str(),
                 size(u.referenced - u.exclusive).c_str(), last.c_str(), name.c_str());
  }
  return 0;
}

}  // namespace btrdedupe
