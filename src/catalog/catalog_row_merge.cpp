// fingerprint() of a run that read its trees whole: the scan's files merged against the
// catalog's rows in key order, the rows updated, changed files fingerprinted and twins found.
#include <algorithm>
#include <numeric>
#include <utility>

#include "src/catalog/catalog_file_state.h"
#include "src/catalog/catalog_session.h"
#include "src/read/file_extent_index.h"
#include "src/run/heap_release.h"

namespace btrdedupe {

using catalog_state::file_states;
using catalog_state::same_state;

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
  // Unchanged files' proven data hashes (CatalogFile::short_hash): the proof's, should
  // they be candidates.
  std::vector<std::pair<uint32_t, uint64_t>> short_hashes;
};

btrfs::Result<FingerprintResult> CatalogSession::fingerprint(ScanResult& scan,
                                                            CatalogStats& stats,
                                                            unsigned threads) {
  stats.used = true;
  stats.upgraded_from = catalog_->upgraded_from();
  read_threads_ = threads;
  if (read_ == TreeRead::Whole) return fingerprint_merged(scan, stats);
  stats.incremental = counts_as_incremental(read_);  // a side run read its roots whole
  stats.files_settling = files_settling_;
  stats.settled_at = settled_at_;
  TwinsAcrossWindows none;  // one batch: no other window
  return fingerprint_with_twins(scan, stats, none);
}

btrfs::Result<FingerprintResult> CatalogSession::fingerprint_merged(ScanResult& scan,
                                                                   CatalogStats& stats) {
  states_at_scan_ = file_states(scan);
  const uint32_t n = static_cast<uint32_t>(scan.files.size());
  RowMerge merge = merge_rows(scan, stats);
  // The run's updates go to the catalog as they are made, in one transaction that record()
  // commits: a run that fails or stops before it leaves the catalog as it was.
  if (auto ok = update_rows(scan, merge); !ok) return ok.error();

  auto fp = btrdedupe::fingerprint(scan, {}, &merge.changed, read_threads_, csums_);
  if (!fp) return fp.error();
  const uint16_t cs = scan.fs.csum_size;
  auto candidate = put_rows(scan, merge, *fp);
  if (!candidate) return candidate.error();
  stats.candidates =
      static_cast<uint64_t>(std::count(candidate->begin(), candidate->end(), true));
  roles_ = BatchRoles::incremental(n);
  for (uint32_t i = 0; i < n; ++i)
    if ((*candidate)[i]) roles_.set(i, BatchRole::Candidate);
  for (const auto& [i, hash] : merge.short_hashes)
    if ((*candidate)[i] && !merge.changed[i]) fp->short_hashes[i] = hash;
  if (stats.candidates == 0) return fp;
  auto more = btrdedupe::fingerprint(scan, {}, &*candidate, read_threads_, csums_);
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
      if (row.short_hash && !m.changed[i]) m.short_hashes.emplace_back(i, *row.short_hash);
    }
    if (!found) m.stale.push_back(key);
  });
  for (uint32_t i = 0; i < n; ++i) {
    if (!has_extents[i]) continue;
    m.changed[i] = change_rule_.changed(has_row[i], m.changed[i]);
    if (m.changed[i])
      ++stats.files_changed;
    else
      ++stats.files_known;
  }
  if (!scope_rule_.unmet_rows_are_stale()) m.stale.clear();
  stats.stale_rows = m.stale.size();  // removed now, in the run's transaction
  m.other_rows = rows > m.stale.size();
  return m;
}

btrfs::Result<void> CatalogSession::update_rows(const ScanResult& scan, RowMerge& merge) {
  if (auto ok = catalog_->begin(); !ok) return ok;
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

}  // namespace btrdedupe
