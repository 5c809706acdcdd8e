// Opening a CatalogSession on a hashfile (with no paths given, a replay of its last run's
// scope) and the check at a run's start of whether anything changed since that run.
#include "src/catalog/catalog_session.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "btrfs/subvolume.h"

namespace btrdedupe {
namespace {

std::string options_text(const JobOptions& o) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "recursive=%d min_size=%" PRIu64 " block_size=%" PRIu64
                " partial=%d readonly=%d",
                o.recursive ? 1 : 0, o.min_file_size, o.block_size, o.partial ? 1 : 0,
                o.dedupe_readonly ? 1 : 0);
  std::string text = buf;
  // The subvolume selection (resolved to ids by run_job): another selection, another scope.
  if (!o.subvolumes.empty()) {
    auto list = [](const std::vector<std::string>& ids) {
      std::string s;
      for (const auto& id : ids) s += (s.empty() ? "" : ",") + id;
      return s;
    };
    text += " subvols=" + list(o.subvolumes.include) + " exclude_subvols=" +
            list(o.subvolumes.exclude) + " all_subvols=" + (o.subvolumes.all ? "1" : "0");
  }
  // Other patterns leave other files out: another scope. Last, as patterns may hold spaces.
  for (const auto& p : o.exclude_patterns) text += " exclude=" + p;
  return text;
}

void apply_options_text(const std::string& text, JobOptions& o) {
  int recursive = 0, partial = 1, readonly = 0;
  uint64_t min_size = 0, block = o.block_size;
  if (std::sscanf(text.c_str(), "recursive=%d min_size=%" SCNu64 " block_size=%" SCNu64
                  " partial=%d readonly=%d",
                  &recursive, &min_size, &block, &partial, &readonly) == 5) {
    o.recursive = recursive;
    o.min_file_size = min_size;
    o.block_size = block;
    o.partial = partial;
    o.dedupe_readonly = readonly;
  }
  // " subvols=1,2 exclude_subvols=3 all_subvols=0", when the run chose subvolumes.
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    auto ids = [&] {
      std::vector<std::string> out;
      std::istringstream in(value);
      for (std::string id; std::getline(in, id, ',');)
        if (!id.empty()) out.push_back(id);
      return out;
    };
    if (key == "subvols") o.subvolumes.include = ids();
    if (key == "exclude_subvols") o.subvolumes.exclude = ids();
    if (key == "all_subvols") o.subvolumes.all = value == "1";
  }
}

}  // namespace

btrfs::Result<JobOptions> replayed_options(const Catalog& catalog, JobOptions options) {
  if (!options.paths.empty()) return options;
  const auto scope = catalog.scope();
  if (!scope || scope->roots.empty())
    return btrfs::Error{EINVAL, "hashfile " + catalog.path() +
                                    " holds no earlier run to repeat: give the paths to scan"};
  if (scope->options.find(" exclude=") != std::string::npos)
    return btrfs::Error{EINVAL, "hashfile " + catalog.path() +
                                    " was made by a run with --exclude: give its paths and "
                                    "patterns again to repeat it"};
  options.paths = scope->roots;
  apply_options_text(scope->options, options);
  options.dedupe = options.dedupe || scope->dedupe;
  return options;
}

btrfs::Result<std::unique_ptr<CatalogSession>> CatalogSession::on(
    std::unique_ptr<Catalog> catalog, const JobOptions& options, const RootReader& reader) {
  auto s = std::make_unique<CatalogSession>(Made{}, std::move(catalog));
  s->reader_ = &reader;
  s->csums_ = reader.checksums();
  s->block_size_ = options.block_size;
  s->settle_seconds_ = options.settle_seconds;
  return s;
}

btrfs::Result<bool> CatalogSession::unchanged_since_last_run(const JobOptions& options,
                                                             const std::vector<uint64_t>* will_scan) {
  CatalogScope scope;
  for (const auto& p : options.paths) {
    char* real = ::realpath(p.c_str(), nullptr);
    if (!real) return btrfs::errno_error(p);
    scope.roots.emplace_back(real);
    std::free(real);
  }
  scope.options = options_text(options);
  scope.dedupe = options.dedupe;
  first_path_ = scope.roots.front();
  auto fd = btrfs::Fd::open(first_path_, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  auto fsid = reader_->fsid(first_path_);
  if (!fsid) return fsid.error();
  if (auto ok = catalog_->bind(*fsid); !ok) return ok.error();
  // Subfolders of the catalog's roots: its rows serve them as they are (a side run).
  scope_rule_ = CatalogScopeRule::of(catalog_->scope(), scope);
  if (scope_rule_.sets_catalog_scope())
    if (auto ok = catalog_->set_scope(scope); !ok) return ok.error();

  // A subvolume's generation (its root item) only moves when a transaction commits: a file
  // changed in the last seconds (up to the 30 s commit interval) would look unchanged.
  ::syncfs(fd->get());
  auto current = reader_->generations(first_path_);
  if (!current) return current.error();
  generations_at_start_ = std::move(*current);
  const auto stored = catalog_->subvolume_generations();
  if (stored.empty()) return false;
  // Duplicates an earlier run found may still wait for a dedupe: a dedupe run matches them.
  change_rule_ = ChangeRule::after_last_run(options.dedupe, catalog_->pending());
  if (!change_rule_.told_by_generations()) return false;
  if (will_scan)
    for (uint64_t id : *will_scan)
      if (!stored.count(id)) return false;
  for (const auto& [id, gen] : stored) {
    auto it = generations_at_start_.find(id);
    if (it == generations_at_start_.end() || it->second != gen) return false;
  }
  return true;
}

}  // namespace btrdedupe
