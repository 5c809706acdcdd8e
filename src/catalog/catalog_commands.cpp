#include "src/catalog/catalog_commands.h"

#include <ctime>
#include <map>
#include <set>

#include "src/report/byte_size.h"
#include "src/catalog/catalog.h"

namespace btrdedupe {
namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

std::string when(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::unique_ptr<Catalog> open_or_say(const std::string& hashfile, std::FILE* err) {
  auto c = Catalog::open(hashfile);
  if (!c) {
    std::fprintf(err, "btrdedupe: %s\n", c.error().message().c_str());
    return nullptr;
  }
  return std::move(*c);
}

}  // namespace

int list_catalog(const std::string& hashfile, bool human, std::FILE* out, std::FILE* err) {
  auto c = open_or_say(hashfile, err);
  if (!c) return 1;
  std::fprintf(out, "Hashfile %s (format %d)\n", hashfile.c_str(), kCatalogFormat);
  std::fprintf(out, "  filesystem: %s\n", c->fsid().value_or("(none yet)").c_str());
  if (auto scope = c->scope()) {
    for (const auto& r : scope->roots) std::fprintf(out, "  root: %s\n", r.c_str());
    std::fprintf(out, "  options: %s%s\n", scope->options.c_str(), scope->dedupe ? " dedupe=1" : "");
  }
  const auto gens = c->subvolume_generations();
  const auto per = c->files_per_subvolume();
  std::map<uint64_t, uint64_t> ordered(gens.begin(), gens.end());
  std::fprintf(out, "  subvolumes: %zu\n", ordered.size());
  for (const auto& [id, gen] : ordered) {
    auto it = per.find(id);
    std::fprintf(out, "    %llu  scanned at generation %llu  %llu files\n", ull(id), ull(gen),
                 ull(it == per.end() ? 0 : it->second));
  }
  const auto n = c->counts();
  std::fprintf(out, "  files: %llu (%s), %llu with a whole-file hash; %llu anchor rows\n",
               ull(n.files), size_text(n.bytes, human).c_str(), ull(n.files_with_hash),
               ull(n.anchors));
  const auto runs = c->runs();
  std::fprintf(out, "  runs: %zu", runs.size());
  if (!runs.empty()) std::fprintf(out, ", last %s", when(runs.back().finished).c_str());
  std::fprintf(out, "\n");
  return 0;
}

int catalog_stats(const std::string& hashfile, bool human, std::FILE* out, std::FILE* err) {
  auto c = open_or_say(hashfile, err);
  if (!c) return 1;
  const auto n = c->counts();
  std::fprintf(out, "Files catalogued: %llu, %s\n", ull(n.files), size_text(n.bytes, human).c_str());
  std::fprintf(out, "Identical files: %llu groups; %llu files are copies of another, %s "
               "(shared already, or dedupable)\n",
               ull(n.duplicate_groups), ull(n.duplicate_files),
               size_text(n.duplicate_bytes, human).c_str());
  std::fprintf(out, "Anchor rows (for partial matches): %llu\n", ull(n.anchors));
  uint64_t deduped = 0;
  for (const auto& r : c->runs()) deduped += r.bytes_deduped;
  std::fprintf(out, "Deduped by the runs recorded: %s\n", size_text(deduped, human).c_str());
  return 0;
}

int catalog_history(const std::string& hashfile, bool human, std::FILE* out, std::FILE* err) {
  auto c = open_or_say(hashfile, err);
  if (!c) return 1;
  const auto runs = c->runs();
  if (runs.empty()) std::fprintf(out, "No runs recorded in %s\n", hashfile.c_str());
  for (const auto& r : runs) {
    std::string roots = r.roots;
    for (auto& ch : roots)
      if (ch == '\n') ch = ' ';
    std::fprintf(out, "%s  %5llds  exit %d  %llu files  read %s  deduped %s  %s\n",
                 when(r.started).c_str(), static_cast<long long>(r.finished - r.started),
                 r.exit_code, ull(r.files), size_text(r.bytes_read, human).c_str(),
                 size_text(r.bytes_deduped, human).c_str(), roots.c_str());
  }
  return 0;
}

int remove_from_catalog(const std::string& hashfile, const std::vector<std::string>& paths,
                        const RootReader& reader, std::FILE* out, std::FILE* err) {
  auto c = open_or_say(hashfile, err);
  if (!c) return 1;
  int status = 0;
  if (auto ok = c->begin(); !ok) {
    std::fprintf(err, "btrdedupe: %s\n", ok.error().message().c_str());
    return 1;
  }
  const auto known = c->files();
  uint64_t removed = 0;
  std::set<uint64_t> subvolumes;
  for (const auto& p : paths) {
    ScanOptions so;
    so.recursive = true;
    so.fold_readonly_aliases = false;
    so.warm_csum_tree = false;  // no fingerprint follows
    auto scan = reader.scan(p, so);
    if (!scan) {
      std::fprintf(err, "btrdedupe: %s\n", scan.error().message().c_str());
      status = 1;
      continue;
    }
    if (auto fsid = c->fsid(); fsid && *fsid != scan->fs.fsid_string()) {
      std::fprintf(err, "btrdedupe: %s is not on the filesystem of hashfile %s\n", p.c_str(),
                   hashfile.c_str());
      status = 1;
      continue;
    }
    for (const auto& f : scan->files) {
      if (!known.count({f.subvolume, f.inode})) continue;
      if (auto ok = c->remove_file({f.subvolume, f.inode}); !ok) {
        std::fprintf(err, "btrdedupe: %s\n", ok.error().message().c_str());
        return 1;
      }
      ++removed;
      subvolumes.insert(f.subvolume);
    }
    for (const auto& sv : scan->subvolumes) subvolumes.insert(sv.id);
  }
  for (uint64_t id : subvolumes)
    if (auto ok = c->forget_subvolume(id); !ok) {
      std::fprintf(err, "btrdedupe: %s\n", ok.error().message().c_str());
      return 1;
    }
  if (auto ok = c->commit(); !ok) {
    std::fprintf(err, "btrdedupe: %s\n", ok.error().message().c_str());
    return 1;
  }
  std::fprintf(out, "Removed %llu files from %s; %zu subvolume(s) will be read again\n",
               ull(removed), hashfile.c_str(), subvolumes.size());
  return status;
}

}  // namespace btrdedupe
