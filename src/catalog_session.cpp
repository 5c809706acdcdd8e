#include "src/catalog_session.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <utility>

#include "btrfs/fd.h"
#include "src/heap_release.h"
#include "btrfs/fs_info.h"
#include "btrfs/subvolume.h"
#include "src/content_hash.h"
#include "src/file_extent_index.h"
#include "src/root_paths.h"

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

int64_t mtime_ns(const ScannedFile& f) {
  return f.mtime_sec * 1000000000LL + f.mtime_nsec;
}

bool same_state(const CatalogFile& row, const ScannedFile& f) {
  return row.size == f.size && row.mtime_ns == mtime_ns(f) && row.flags == f.inode_flags;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::unordered_map<uint64_t, FileStateDigest> file_states(const ScanResult& scan) {
  std::unordered_map<uint64_t, FileStateDigest> out;
  for (const auto& f : scan.files) {
    const uint64_t h =
        mix(f.inode ^ mix(f.size ^ mix(static_cast<uint64_t>(mtime_ns(f)))));
    auto& d = out[f.subvolume];
    ++d.count;
    d.sum += h;
    d.xored ^= mix(h + 0x9E3779B97F4A7C15ULL);
  }
  return out;
}

}  // namespace

btrfs::Result<std::unordered_map<uint64_t, uint64_t>> CatalogSession::generations_now(
    const std::string& path) {
  auto list = btrfs::list_subvolumes(path);
  if (!list) return list.error();
  std::unordered_map<uint64_t, uint64_t> out;
  for (const auto& s : *list) out[s.id] = s.generation;
  return out;
}

btrfs::Result<std::unordered_map<uint64_t, uint64_t>> CatalogSession::generations_after_commit()
    const {
  auto fd = btrfs::Fd::open(first_path_, O_RDONLY | O_NONBLOCK);
  if (fd) ::syncfs(fd->get());
  return generations_now(first_path_);
}

btrfs::Result<std::unique_ptr<CatalogSession>> CatalogSession::open(JobOptions& options) {
  auto catalog = Catalog::open(options.hashfile);
  if (!catalog) return catalog.error();
  std::unique_ptr<CatalogSession> s(new CatalogSession(std::move(*catalog)));  // private ctor
  if (options.paths.empty()) {
    const auto scope = s->catalog_->scope();
    if (!scope || scope->roots.empty())
      return btrfs::Error{EINVAL, "hashfile " + options.hashfile +
                                      " holds no earlier run to repeat: give the paths to scan"};
    options.paths = scope->roots;
    if (scope->options.find(" exclude=") != std::string::npos)
      return btrfs::Error{EINVAL, "hashfile " + options.hashfile +
                                      " was made by a run with --exclude: give its paths and "
                                      "patterns again to repeat it"};
    apply_options_text(scope->options, options);
    options.dedupe = options.dedupe || scope->dedupe;
  }
  s->block_size_ = options.block_size;
  return s;
}

namespace {

constexpr const char* kTemporaryPrefix = "btrdedupe-window-";
constexpr const char* kTemporarySuffixes[] = {"", "-wal", "-shm", "-journal"};

// Temporary catalogs are named after their run's pid: a run that died (SIGKILL, a crash)
// could not remove its own, the next one does.
void remove_dead_runs_catalogs(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTemporaryPrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::strlen(kTemporaryPrefix));
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (pid <= 0 || end == rest.c_str() || *end != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlink(entry.path().c_str());
  }
}

}  // namespace

btrfs::Result<std::unique_ptr<CatalogSession>> CatalogSession::open_temporary(
    const JobOptions& options) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/var/tmp";
  remove_dead_runs_catalogs(dir);
  std::string path =
      dir + "/" + kTemporaryPrefix + std::to_string(::getpid()) + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return btrfs::errno_error("creating a temporary catalog in " + path);
  ::close(fd);
  auto catalog = Catalog::open(path);
  if (!catalog) {
    ::unlink(path.c_str());
    return catalog.error();
  }
  if (auto ok = (*catalog)->use_for_one_run(); !ok) {
    catalog->reset();
    ::unlink(path.c_str());
    return ok.error();
  }
  std::unique_ptr<CatalogSession> s(new CatalogSession(std::move(*catalog)));
  s->temporary_ = path;
  s->block_size_ = options.block_size;
  return s;
}

CatalogSession::~CatalogSession() {
  if (temporary_.empty()) return;
  catalog_.reset();  // closed before its files go
  for (const char* suffix : kTemporarySuffixes) ::unlink((temporary_ + suffix).c_str());
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
  if (auto ok = btrfs::check_is_btrfs(fd->get(), first_path_); !ok) return ok.error();
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  if (auto ok = catalog_->bind(info->fsid_string()); !ok) return ok.error();
  // Subfolders of the catalog's roots: its rows serve them as they are (a side run).
  const auto old = catalog_->scope();
  side_run_ = old && old->options == scope.options && old->roots != scope.roots &&
              paths_within(scope.roots, old->roots);
  if (side_run_) catalog_roots_ = old->roots;
  if (!side_run_)
    if (auto ok = catalog_->set_scope(scope); !ok) return ok.error();

  // A subvolume's generation (its root item) only moves when a transaction commits: a file
  // changed in the last seconds (up to the 30 s commit interval) would look unchanged.
  ::syncfs(fd->get());
  auto current = generations_now(first_path_);
  if (!current) return current.error();
  generations_at_start_ = std::move(*current);
  const auto stored = catalog_->subvolume_generations();
  if (stored.empty()) return false;
  if (options.dedupe && catalog_->pending()) {
    rescan_all_ = true;  // duplicates an earlier run found may still wait for a dedupe
    return false;
  }
  if (will_scan)
    for (uint64_t id : *will_scan)
      if (!stored.count(id)) return false;
  for (const auto& [id, gen] : stored) {
    auto it = generations_at_start_.find(id);
    if (it == generations_at_start_.end() || it->second != gen) return false;
  }
  return true;
}

namespace {

// A file's key as the catalog orders its rows (SQLite compares signed).
using SignedKey = std::pair<int64_t, int64_t>;

SignedKey signed_key(const FileKey& key) {
  return {static_cast<int64_t>(key.subvolume), static_cast<int64_t>(key.inode)};
}

SignedKey signed_key(const ScanResult& scan, uint32_t i) {
  return {static_cast<int64_t>(scan.files[i].subvolume),
          static_cast<int64_t>(scan.files[i].inode)};
}

}  // namespace

// The scan's files against the catalog's rows. The files go in the order of the
// catalog's primary key, so that its rows stream through a merge instead of being loaded
// into a map.
struct CatalogSession::RowMerge {
  std::vector<uint32_t> by_key;
  std::vector<bool> changed;      // fingerprinted now, and given a new row
  std::vector<FileKey> stale;     // rows of files gone from the scan
  std::vector<uint32_t> moved;    // files whose row names another directory
  bool other_rows = false;        // rows that stay: the changed files' possible twins
};

btrfs::Result<FingerprintResult> CatalogSession::fingerprint(ScanResult& scan,
                                                            CatalogStats& stats,
                                                            unsigned threads) {
  stats.used = true;
  stats.upgraded_from = catalog_->upgraded_from();
  read_threads_ = threads;
  if (incremental_) return fingerprint_incremental(scan, stats);
  states_at_scan_ = file_states(scan);
  const uint32_t n = static_cast<uint32_t>(scan.files.size());
  RowMerge merge = merge_rows(scan, stats);
  // The run's updates go to the catalog as they are made, in one transaction that record()
  // commits: a run that fails or stops before it leaves the catalog as it was.
  if (auto ok = update_rows(scan, merge); !ok) return ok.error();

  auto fp = btrdedupe::fingerprint(scan, {}, &merge.changed, read_threads_);
  if (!fp) return fp.error();
  const uint16_t cs = scan.fs.csum_size;
  auto candidate = put_rows(scan, merge, *fp);
  if (!candidate) return candidate.error();
  stats.candidates =
      static_cast<uint64_t>(std::count(candidate->begin(), candidate->end(), true));
  if (stats.candidates == 0) return fp;
  auto more = btrdedupe::fingerprint(scan, {}, &*candidate, read_threads_);
  if (!more) return more.error();
  fp->files = FileSumsTable::gather(n, cs, [&](size_t i) {
    return (*candidate)[i] ? more->files[i] : fp->files[i];
  });
  fp->stats.add(more->stats);
  return fp;
}

CatalogSession::RowMerge CatalogSession::merge_rows(const ScanResult& scan,
                                                    CatalogStats& stats) const {
  const uint32_t n = static_cast<uint32_t>(scan.files.size());
  RowMerge m;
  m.by_key.resize(n);
  std::iota(m.by_key.begin(), m.by_key.end(), 0u);
  std::sort(m.by_key.begin(), m.by_key.end(), [&](uint32_t x, uint32_t y) {
    return signed_key(scan, x) < signed_key(scan, y);
  });
  std::vector<bool> has_extents(n, false);
  for (const auto& e : scan.extents) has_extents[e.file] = true;
  m.changed.assign(n, false);
  std::vector<bool> has_row(n, false);
  uint64_t rows = 0;
  size_t next = 0;
  catalog_->for_each_file([&](const FileKey& key, const CatalogFile& row) {
    ++rows;
    const SignedKey k = signed_key(key);
    while (next < n && signed_key(scan, m.by_key[next]) < k) ++next;
    bool found = false;
    for (size_t j = next; j < n && signed_key(scan, m.by_key[j]) == k; ++j) {
      const uint32_t i = m.by_key[j];
      const auto& f = scan.files[i];
      found = has_row[i] = true;
      if (has_extents[i] && !same_state(row, f)) m.changed[i] = true;
      if (f.parent && row.parent != f.parent) m.moved.push_back(i);
    }
    if (!found) m.stale.push_back(key);
  });
  for (uint32_t i = 0; i < n; ++i) {
    if (!has_extents[i]) continue;
    if (!has_row[i] || rescan_all_) m.changed[i] = true;
    if (m.changed[i])
      ++stats.files_changed;
    else
      ++stats.files_known;
  }
  if (side_run_) m.stale.clear();  // outside its roots, not gone
  stats.stale_rows = m.stale.size();  // removed now, in the run's transaction
  m.other_rows = rows > m.stale.size();
  return m;
}

btrfs::Result<void> CatalogSession::update_rows(const ScanResult& scan, RowMerge& merge) {
  if (auto ok = catalog_->begin(); !ok) return ok;
  writing_ = true;
  for (const auto& key : merge.stale)
    if (auto ok = catalog_->remove_file(key); !ok) return ok;
  free_storage(merge.stale);
  // Rows keep the directory of their file's first name: a later incremental run finds
  // deleted files through the directories that changed. Changed files get a new row.
  for (uint32_t i : merge.moved)
    if (!merge.changed[i])
      if (auto ok = catalog_->set_parent({scan.files[i].subvolume, scan.files[i].inode},
                                         scan.files[i].parent);
          !ok)
        return ok;
  free_storage(merge.moved);
  return {};
}

// Rows for the changed files, and the known files that may hold the same content (the
// result: which files are candidates). A lookup may return a changed file's new row:
// changed files are never candidates.
btrfs::Result<std::vector<bool>> CatalogSession::put_rows(const ScanResult& scan,
                                                          const RowMerge& merge,
                                                          const FingerprintResult& fp) {
  const uint32_t n = static_cast<uint32_t>(scan.files.size());
  std::vector<bool> candidate(n, false);
  const FileExtentIndex index(scan);  // where each file's data lies: its hole map
  auto mark = [&](const std::vector<FileKey>& keys) {
    for (const auto& key : keys) {
      const SignedKey k = signed_key(key);
      auto it = std::lower_bound(
          merge.by_key.begin(), merge.by_key.end(), k,
          [&](uint32_t i, const auto& v) { return signed_key(scan, i) < v; });
      for (; it != merge.by_key.end() && signed_key(scan, *it) == k; ++it)
        if (!merge.changed[*it]) candidate[*it] = true;
    }
  };
  for (uint32_t i = 0; i < n; ++i) {
    if (!merge.changed[i]) continue;
    const auto& f = scan.files[i];
    const Fingerprinted entry = fingerprinted(scan, index, fp.files[i], i);
    if (merge.other_rows) {
      if (entry.row.whole_hash) mark(catalog_->files_with_hash(*entry.row.whole_hash));
      for (uint64_t h : entry.anchors) mark(catalog_->files_with_anchor(h));
    }
    if (auto ok = catalog_->put_file({f.subvolume, f.inode}, entry.row, entry.anchors); !ok)
      return ok.error();
  }
  return candidate;
}

// A side run's record: the rows it fingerprinted (written already by a full scan's
// fingerprint(), kept until now by side_scan's) and the rows of files it found gone, and
// the run. The generations stay those of the catalog's last run of its own roots.
btrfs::Result<void> CatalogSession::record_side_run(const RunRecord& run) {
  if (!writing_) {
    if (auto ok = catalog_->begin(); !ok) return ok;
    writing_ = true;
  }
  for (const auto& [key, entry] : fingerprinted_)
    if (auto ok = catalog_->put_file(key, entry.row, entry.anchors); !ok) return ok;
  for (const auto& key : stale_)
    if (auto ok = catalog_->remove_file(key); !ok) return ok;
  // Duplicates it left are duplicates of the catalog's scope too; those it did not look
  // at may still wait.
  if (!run.complete)
    if (auto ok = catalog_->set_pending(true); !ok) return ok;
  if (auto ok = catalog_->add_run(run, false); !ok) return ok;
  writing_ = false;
  return catalog_->commit();
}

btrfs::Result<void> CatalogSession::record(const ScanResult& scan, const ScanResult* after,
                                           const RunRecord& run) {
  if (windowed_) return record_windowed(scan, after, run);
  if (incremental_) return record_incremental(scan, after, run);
  if (side_run_) return record_side_run(run);
  if (!writing_) {  // nothing changed, nothing was read: only the run is new
    if (auto ok = catalog_->begin(); !ok) return ok;
    writing_ = true;
  }
  std::unordered_map<uint64_t, uint64_t> gens;
  for (const auto& sv : scan.subvolumes) gens[sv.id] = generations_at_start_[sv.id];
  if (after) {
    // Our own dedupe raised the generations. Take the new ones where nothing else changed
    // during the run; elsewhere keep the old ones, so the next run looks again.
    auto now = generations_after_commit();
    if (now) {
      const auto& before_states = states_at_scan_;
      const auto after_states = file_states(*after);
      for (auto& [id, gen] : gens) {
        auto b = before_states.find(id);
        auto a = after_states.find(id);
        const bool same = (b == before_states.end()) == (a == after_states.end()) &&
                          (b == before_states.end() || b->second == a->second);
        if (same && now->count(id)) gen = now->at(id);
      }
    }
  }
  if (!scan.roots.empty()) {
    if (auto ok = catalog_->set_subvolume_generations(gens); !ok) return ok;
    if (auto ok = catalog_->set_pending(!run.complete); !ok) return ok;
  }
  if (auto ok = catalog_->add_run(run); !ok) return ok;
  writing_ = false;
  return catalog_->commit();
}

}  // namespace btrdedupe
