// CatalogSession's incremental runs (the rule is in catalog_session.h, the user's view in
// docs/hashfile.md): find what changed from the leaves written since the recorded
// generations, verify every catalogued file against the tree before it is used, and keep
// memory to what changed.
#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <set>

#include "btrfs/tree_search.h"
#include "src/catalog_session.h"
#include "src/content_hash.h"
#include "src/file_extent_index.h"
#include "src/snapshot_family.h"

namespace btrdedupe {
namespace {

using Outcome = IncrementalScan::Outcome;

constexpr int64_t kClockMarginSeconds = 300;
// Earlier windows' files taken as twins of a window's file: per whole-file hash one, the
// source of the rest (this run wrote the rows, so it is gone only if deleted meanwhile);
// per anchor two, as files sharing an anchor may share no more than that.
constexpr size_t kWindowTwinsPerWholeHash = 1;
constexpr size_t kWindowTwinsPerAnchor = 2;
// Files of windows still to come taken per hash as ahead twins (CatalogSession::
// index_window), and at most this many per file of the window: past them, a copy is
// deduped in its own window, reading its source again. Four keeps a window's memory
// bounded (52.8 MiB peak on 8 copies of linux-source) while 8 copies still take every
// copy in the window of the first or the second (two: 11,748 MiB read against 11,377).
constexpr size_t kAheadTwinsPerHash = 15;
constexpr size_t kAheadTwinsPerWindowFile = 4;

bool same_state(const CatalogFile& row, const btrfs::InodeItem& item) {
  return row.size == item.size && row.flags == item.flags &&
         row.mtime_ns == item.mtime.sec * 1000000000LL + item.mtime.nsec;
}

}  // namespace

btrfs::Result<std::optional<ScanResult>> CatalogSession::side_scan(
    btrfs::Result<std::unique_ptr<IncrementalScan>> scan, ScanResult out) {
  // Read whole, as a full scan reads it (the full scan says what is wrong), read-only
  // snapshots folded as in windows: then its twins outside the roots join as an
  // incremental run's.
  if (!scan || !*scan) return std::optional<ScanResult>{};
  incremental_ = std::move(*scan);
  incremental_->add_source_roots(catalog_roots_);
  for (;;) {
    auto more = incremental_->read_window(out, SIZE_MAX);
    if (!more) return more.error();
    if (!*more) break;
  }
  incremental_->finish(out);
  return std::optional<ScanResult>{std::move(out)};
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::incremental_scan(
    const std::vector<std::string>& roots, const ScanOptions& options) {
  if (side_run_) {
    ScanResult out;
    auto scan = IncrementalScan::of_roots(roots, options, out);
    return side_scan(std::move(scan), std::move(out));
  }
  recorded_generations_ = catalog_->subvolume_generations();
  // A first run, or one that must match every file again (Catalog::pending).
  if (recorded_generations_.empty() || rescan_all_) return std::optional<ScanResult>{};
  ScanResult out;
  auto inc = IncrementalScan::of_roots(roots, options, out);
  if (!inc || !*inc) return std::optional<ScanResult>{};  // the full scan says what is wrong
  incremental_ = std::move(*inc);
  return find_changed(std::move(out));
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::incremental_scan(
    const std::string& fs_path, const std::vector<SubvolumeRoot>& flat,
    const ScanOptions& options) {
  if (side_run_) {
    ScanResult out;
    auto scan = IncrementalScan::of_subvolumes(fs_path, flat, options, out);
    return side_scan(std::move(scan), std::move(out));
  }
  recorded_generations_ = catalog_->subvolume_generations();
  // A first run, or one that must match every file again (Catalog::pending).
  if (recorded_generations_.empty() || rescan_all_) return std::optional<ScanResult>{};
  ScanResult out;
  auto inc = IncrementalScan::of_subvolumes(fs_path, flat, options, out);
  if (!inc || !*inc) return std::optional<ScanResult>{};
  incremental_ = std::move(*inc);
  return find_changed(std::move(out));
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::windowed_scan(
    const std::vector<std::string>& roots, const ScanOptions& options) {
  ScanResult base;
  auto scan = IncrementalScan::of_roots(roots, options, base);
  return start_windows(std::move(scan), std::move(base));
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::windowed_scan(
    const std::string& fs_path, const std::vector<SubvolumeRoot>& flat,
    const ScanOptions& options) {
  ScanResult base;
  auto scan = IncrementalScan::of_subvolumes(fs_path, flat, options, base);
  return start_windows(std::move(scan), std::move(base));
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::start_windows(
    btrfs::Result<std::unique_ptr<IncrementalScan>> scan, ScanResult base) {
  if (!scan) return scan.error();
  if (!*scan || !may_take_windows()) return std::optional<ScanResult>{};
  // A windowed run matches every file again and writes every row again: the old ones go
  // first, in the run's transaction (a run that fails leaves them as they were).
  const auto old_rows = catalog_->files_per_subvolume();
  if (!old_rows.empty()) {
    if (auto ok = catalog_->begin(); !ok) return ok.error();
    writing_ = true;
    for (const auto& [subvolume, count] : old_rows)
      if (auto ok = catalog_->remove_subvolume_files(subvolume); !ok) return ok.error();
  }
  incremental_ = std::move(*scan);
  windowed_ = true;
  return std::optional<ScanResult>{std::move(base)};
}

btrfs::Result<bool> CatalogSession::next_window(ScanResult& window, size_t max_files) {
  auto more = incremental_->read_window(window, max_files);
  if (!more) return more.error();
  incremental_->finish(window);
  return *more;
}

double CatalogSession::read_fraction() {
  return incremental_ ? incremental_->read_fraction() : 1.0;
}

btrfs::Result<void> CatalogSession::record_windowed(const ScanResult& scan,
                                                    const ScanResult* after,
                                                    const RunRecord& run) {
  if (!writing_) {
    if (auto ok = catalog_->begin(); !ok) return ok;
    writing_ = true;
  }
  std::unordered_map<uint64_t, uint64_t> gens;
  for (const auto& sv : scan.subvolumes) gens[sv.id] = generations_at_start_[sv.id];
  // Our dedupe raised the generations. The new one is taken when every inode changed since
  // the run began is a file of the run, with the size and mtime of its row (no file's
  // state is held in memory for this: the rows were written as the windows went).
  if (after && run.bytes_deduped) {
    auto now = generations_after_commit();
    if (now)
      for (auto& [id, gen] : gens) {
        auto it = now->find(id);
        if (it == now->end() || it->second == gen) continue;
        bool steady = true;
        const uint64_t subvolume = id;
        auto found = incremental_->changed_inodes(
            subvolume, gen, it->second, [&](uint64_t inode, const btrfs::InodeItem& item) {
              if (!steady) return;
              const auto row = catalog_->file({subvolume, inode});
              steady = row && same_state(*row, item);
            });
        if (!found) return found.error();
        if (steady) gen = it->second;
      }
  }
  for (const auto& key : stale_)
    if (auto ok = catalog_->remove_file(key); !ok) return ok;
  if (auto ok = catalog_->set_subvolume_generations(gens); !ok) return ok;
  if (auto ok = catalog_->set_pending(!run.complete); !ok) return ok;
  if (auto ok = catalog_->add_run(run); !ok) return ok;
  writing_ = false;
  return catalog_->commit();
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::find_changed(ScanResult scan) {
  for (const auto& sv : scan.subvolumes) {
    auto rec = recorded_generations_.find(sv.id);
    auto now = generations_at_start_.find(sv.id);
    // A subvolume never scanned (a new snapshot) is read whole, with the others, so that
    // read-only snapshots fold into their twins as in any full scan.
    if (rec == recorded_generations_.end() || now == generations_at_start_.end() ||
        now->second < rec->second) {
      incremental_.reset();
      return std::optional<ScanResult>{};
    }
  }
  // Whatever changed since the recorded generations changed after the last run began (it
  // synced first). An inode whose ctime is older changed only its atime (reads on a
  // relatime mount, a find over the tree): no rename, no chmod, and for a directory no
  // name removed. The margin absorbs clock steps; checking more costs time, never results.
  const auto last_run = catalog_->last_run_started();
  const int64_t quiet_before = last_run ? *last_run - kClockMarginSeconds : 0;
  for (const auto& sv : scan.subvolumes) {
    known_rows_ += catalog_->file_count(sv.id);
    const uint64_t since = recorded_generations_.at(sv.id);
    if (generations_at_start_.at(sv.id) == since) continue;
    std::vector<std::pair<uint64_t, bool>> changed;  // inode, is a directory
    auto found = incremental_->changed_inodes(
        sv.id, since, btrfs::kMaxU64, [&](uint64_t inode, const btrfs::InodeItem& item) {
          if (item.is_directory()) {
            if (item.ctime.sec >= quiet_before) changed.emplace_back(inode, true);
            return;
          }
          const auto row = catalog_->file({sv.id, inode});
          if (!item.is_regular()) {
            if (row) stale_.insert({sv.id, inode});  // an inode number reused: not a file now
            return;
          }
          if (row && same_state(*row, item) && item.ctime.sec < quiet_before) return;
          changed.emplace_back(inode, false);
        });
    if (!found) return found.error();
    std::vector<uint64_t> directories;
    for (const auto& [inode, is_directory] : changed) {
      if (is_directory) {
        directories.push_back(inode);
        continue;
      }
      const FileKey key{sv.id, inode};
      if (!seen_.insert(key).second) continue;
      const auto row = catalog_->file(key);
      auto state = incremental_->read(sv.id, inode);
      if (!state) return state.error();
      if (!*state) {  // deleted since the search
        if (row) stale_.insert(key);
        continue;
      }
      if (row && same_state(*row, (*state)->item)) {
        // Renamed, chmod'ed, deduped: same content. Still in scope? Moved?
        auto in = incremental_->check(sv.id, **state);
        if (!in) return in.error();
        if (*in != Outcome::Added)
          stale_.insert(key);
        else if ((*state)->parent != row->parent)
          moved_.emplace_back(key, (*state)->parent);
        continue;
      }
      auto added = incremental_->add(scan, sv.id, inode, **state);
      if (!added) return added.error();
      if (*added == Outcome::Added)
        changed_with_row_ += row ? 1 : 0;
      else if (row)
        stale_.insert(key);
    }
    for (uint64_t dir : directories)
      if (auto ok = check_directory(sv.id, dir); !ok) return ok.error();
  }
  incremental_->finish(scan);
  return std::optional<ScanResult>{std::move(scan)};
}

// A deletion leaves no item behind, but it rewrites the directory that held the file's
// name: the rows of files named in a changed directory that no longer names them are
// looked up, and dropped when the file is gone.
btrfs::Result<void> CatalogSession::check_directory(uint64_t subvolume, uint64_t dir) {
  const auto rows = catalog_->files_in_directory(subvolume, dir);
  if (rows.empty()) return {};
  auto children = incremental_->children(subvolume, dir);
  if (!children) return children.error();
  const std::unordered_set<uint64_t> now(children->begin(), children->end());
  for (uint64_t inode : rows) {
    const FileKey key{subvolume, inode};
    if (now.count(inode) || !seen_.insert(key).second) continue;
    auto state = incremental_->read(subvolume, inode);
    if (!state) return state.error();
    if (!*state) {
      stale_.insert(key);
      continue;
    }
    auto in = incremental_->check(subvolume, **state);  // another name is left (hardlink)
    if (!in) return in.error();
    if (*in != Outcome::Added)
      stale_.insert(key);
    else
      moved_.emplace_back(key, (*state)->parent);
  }
  return {};
}

// The catalogued files that may duplicate the scan's own, before they are verified.
struct CatalogSession::Candidates {
  std::unordered_set<FileKey, FileKeyHash> in_scan;
  std::set<std::pair<uint64_t, uint64_t>> files;  // ordered: a deterministic scan
  std::unordered_map<FileKey, bool, FileKeyHash> ahead_keys;  // -> taken by whole hash
  // Earlier twins taken by a whole-file hash that two or more earlier files share.
  std::unordered_set<FileKey, FileKeyHash> grouped_before;
  size_t ahead_bound = 0;
};

btrfs::Result<FingerprintResult> CatalogSession::fingerprint_incremental(ScanResult& scan,
                                                                        CatalogStats& stats) {
  stats.incremental = !windowed_ && !side_run_;  // a side run read its roots whole
  if (windowed_ && !writing_) {  // the whole run's rows in one transaction, as a full run's
    if (auto ok = catalog_->begin(); !ok) return ok.error();
    writing_ = true;
  }
  // Every file of the scan is new or changed; those an earlier window settled as its ahead
  // twins (whole files) need no sums: their rows stand, and their twins were taken.
  std::vector<bool> own_wanted(scan.files.size(), true);
  for (uint32_t i = 0; i < scan.files.size(); ++i)
    own_wanted[i] = !settled_whole_.contains(scan.files[i].subvolume, scan.files[i].inode);
  auto fp = btrdedupe::fingerprint(scan, {}, &own_wanted, read_threads_);
  if (!fp) return fp.error();
  stats.files_changed = scan.files.size();

  const uint16_t cs = scan.fs.csum_size;
  Candidates candidates;
  for (const auto& f : scan.files) candidates.in_scan.insert({f.subvolume, f.inode});
  candidates.ahead_bound = kAheadTwinsPerWindowFile * scan.files.size();
  if (auto ok = put_rows_and_find_twins(scan, *fp, own_wanted, candidates); !ok)
    return ok.error();
  const size_t changed = scan.files.size();
  if (auto ok = verify_candidates(scan, candidates); !ok) return ok.error();
  stats.candidates = scan.files.size() - changed;
  stats.stale_rows = stale_.size();
  const uint64_t gone = changed_with_row_ + stale_.size();
  stats.files_known = known_rows_ > gone ? known_rows_ - gone : 0;
  const auto order = incremental_->finish(scan);
  earlier_.assign(order.size(), false);
  std::vector<bool> wanted(order.size(), false);
  for (uint32_t i = 0; i < order.size(); ++i) wanted[i] = order[i] >= changed;
  grouped_before_.assign(order.size(), false);
  if (windowed_) {
    earlier_ = wanted;
    for (uint32_t i = 0; i < order.size(); ++i)
      grouped_before_[i] = wanted[i] && candidates.grouped_before.count(
                                            {scan.files[i].subvolume, scan.files[i].inode});
  }
  mark_ahead(scan, order, changed, candidates.ahead_keys);
  if (stats.candidates == 0) return fp;
  auto more = btrdedupe::fingerprint(scan, {}, &wanted, read_threads_);
  if (!more) return more.error();
  fp->files = FileSumsTable::gather(order.size(), cs, [&](size_t i) {
    return wanted[i] ? more->files[i] : fp->files[order[i]];
  });
  fp->stats.add(more->stats);
  return fp;
}

void CatalogSession::consider_twins(const std::vector<FileKey>& keys, bool whole,
                                    Candidates& c) const {
  size_t taken = 0, ahead = 0;
  const FileKey* first_taken = nullptr;
  for (const auto& k : keys) {
    if (c.in_scan.count(k) || stale_.count(k)) continue;
    if (look_ahead_ && !incremental_->window_passed(k.subvolume, k.inode)) {
      if (taken_ahead_.contains(k.subvolume, k.inode) || ahead == kAheadTwinsPerHash ||
          c.ahead_keys.size() >= c.ahead_bound)
        continue;  // settled by an earlier window, or left to its own
      c.files.emplace(k.subvolume, k.inode);
      auto [it, fresh] = c.ahead_keys.emplace(k, whole);
      if (!fresh) it->second = it->second || whole;
      ++ahead;
      continue;
    }
    // A window needs a source for its files, not every earlier twin: those were matched
    // with each other in their own windows. The bound keeps a window's memory flat
    // however many copies came before.
    if (windowed_ && taken == (whole ? kWindowTwinsPerWholeHash : kWindowTwinsPerAnchor)) {
      if (whole && first_taken) c.grouped_before.insert(*first_taken);
      continue;
    }
    c.files.emplace(k.subvolume, k.inode);
    first_taken = &k;
    ++taken;
  }
}

// The rows of the scan's own files (kept until record(), or written now in windows), and
// the catalogued files with the same whole-file hash or anchors as candidates.
btrfs::Result<void> CatalogSession::put_rows_and_find_twins(const ScanResult& scan,
                                                            const FingerprintResult& fp,
                                                            const std::vector<bool>& own_wanted,
                                                            Candidates& c) {
  const FileExtentIndex index(scan);  // where each file's data lies: its hole map
  // Rows the first pass wrote stand (the same sums make the same row).
  const std::vector<bool> indexed =
      look_ahead_ ? summed_from_csums(scan) : std::vector<bool>(scan.files.size(), false);
  for (uint32_t i = 0; i < scan.files.size(); ++i) {
    if (!own_wanted[i]) continue;
    const auto& f = scan.files[i];
    Fingerprinted entry = fingerprinted(scan, index, fp.files[i], i);
    if (entry.row.whole_hash)
      consider_twins(catalog_->files_with_hash(*entry.row.whole_hash), true, c);
    for (uint64_t h : entry.anchors) consider_twins(catalog_->files_with_anchor(h), false, c);
    if (indexed[i]) continue;
    if (windowed_) {  // written now: the next windows look this file up
      if (auto ok = catalog_->add_file({f.subvolume, f.inode}, entry.row, entry.anchors); !ok)
        return ok;
    } else {
      fingerprinted_[{f.subvolume, f.inode}] = std::move(entry);
    }
  }
  return {};
}

// Verify before use: a candidate is read from the tree now; gone or out of scope, its row
// goes; changed since the run began, it is left for the next run.
btrfs::Result<void> CatalogSession::verify_candidates(ScanResult& scan, Candidates& c) {
  std::unordered_set<uint64_t> scanned;
  for (const auto& sv : scan.subvolumes) scanned.insert(sv.id);
  // The read-only snapshots that fold into a candidate's file, by the windows' rule.
  const SnapshotFamily family(incremental_->folds_readonly_aliases()
                                  ? scan.subvolumes
                                  : std::vector<btrfs::Subvolume>{});
  // Nearby candidates are read together: per subvolume, in inode order.
  std::map<uint64_t, std::vector<uint64_t>> by_subvolume;
  // A side run's sources may lie in any subvolume of the catalog that is still there.
  for (const auto& [subvolume, inode] : c.files)
    if (scanned.count(subvolume) || (side_run_ && incremental_->has_subvolume(subvolume)))
      by_subvolume[subvolume].push_back(inode);
  c.files.clear();
  for (const auto& [subvolume, inodes] : by_subvolume) {
    auto read = incremental_->read_each(
        subvolume, inodes, [&](uint64_t inode, const InodeState* state) -> btrfs::Result<void> {
          return verify_candidate(scan, subvolume, inode, state, family);
        });
    if (!read) return read;
  }
  return {};
}

// A candidate as read from the tree (`state`; nullptr: gone) joins the scan if its row
// still holds.
btrfs::Result<void> CatalogSession::verify_candidate(ScanResult& scan, uint64_t subvolume,
                                                     uint64_t inode, const InodeState* state,
                                                     const SnapshotFamily& family) {
  const FileKey key{subvolume, inode};
  const auto row = catalog_->file(key);
  if (!row) return {};
  if (!state) {
    stale_.insert(key);
    return {};
  }
  if (!same_state(*row, state->item)) return {};
  auto added = incremental_->add(scan, subvolume, inode, *state);
  if (!added) return added.error();
  if (*added != Outcome::Added && side_run_) {
    // Outside the roots of a side run: a source, and its row stays either way.
    auto outside = incremental_->add_outside(scan, subvolume, inode, *state);
    return outside ? btrfs::Result<void>{} : btrfs::Result<void>(outside.error());
  }
  if (*added != Outcome::Added) {
    stale_.insert(key);
    return {};
  }
  // A snapshot's file has the original's inode number: same extents, the full
  // scan would have folded it into this one.
  const auto file = static_cast<uint32_t>(scan.files.size() - 1);
  for (uint64_t snap : family.folded_into(subvolume)) {
    auto copy = incremental_->read(snap, inode);
    if (!copy) return copy.error();
    if (!*copy || !same_layout(*state, **copy)) continue;
    scan.files[file].readonly_alias = true;
    scan.readonly_alias_subvolumes.add(file, snap);
  }
  return {};
}

// Our own dedupe raised the generation: the new one is taken when every inode changed
// since the run began is a file of this run that kept its size and mtime; anything else
// changed meanwhile, and the next run must look at it.
btrfs::Result<uint64_t> CatalogSession::generation_after_dedupe(uint64_t subvolume,
                                                                uint64_t start, uint64_t now,
                                                                const ScanResult& scan,
                                                                const ScanResult& after) {
  std::unordered_map<uint64_t, uint32_t> files;
  for (uint32_t i = 0; i < scan.files.size(); ++i)
    if (scan.files[i].subvolume == subvolume) files[scan.files[i].inode] = i;
  bool steady = true;
  auto found = incremental_->changed_inodes(
      subvolume, start, now, [&](uint64_t inode, const btrfs::InodeItem& item) {
        auto it = files.find(inode);
        if (it == files.end()) {
          steady = false;
          return;
        }
        const ScannedFile& b = scan.files[it->second];
        const ScannedFile& a = after.files[it->second];
        steady = steady && b.size == item.size && b.size == a.size &&
                 b.mtime_sec == item.mtime.sec && b.mtime_nsec == item.mtime.nsec &&
                 a.mtime_sec == b.mtime_sec && a.mtime_nsec == b.mtime_nsec;
      });
  if (!found) return found.error();
  return steady ? now : start;
}

btrfs::Result<void> CatalogSession::record_incremental(const ScanResult& scan,
                                                       const ScanResult* after,
                                                       const RunRecord& run) {
  if (side_run_) return record_side_run(run);
  std::unordered_map<uint64_t, uint64_t> gens;
  for (const auto& sv : scan.subvolumes) gens[sv.id] = generations_at_start_[sv.id];
  if (after) {
    auto now = generations_after_commit();
    if (now)
      for (auto& [id, gen] : gens) {
        auto it = now->find(id);
        if (it == now->end() || it->second == gen) continue;
        auto taken = generation_after_dedupe(id, gen, it->second, scan, *after);
        if (!taken) return taken.error();
        gen = *taken;
      }
  }
  if (auto ok = catalog_->begin(); !ok) return ok;
  for (const auto& [key, entry] : fingerprinted_)
    if (auto ok = catalog_->put_file(key, entry.row, entry.anchors); !ok) return ok;
  for (const auto& [key, parent] : moved_)
    if (auto ok = catalog_->set_parent(key, parent); !ok) return ok;
  for (const auto& key : stale_)
    if (auto ok = catalog_->remove_file(key); !ok) return ok;
  // Subvolumes deleted (or no longer under the roots) since the last run lose their rows.
  for (const auto& [id, gen] : recorded_generations_)
    if (!gens.count(id))
      if (auto ok = catalog_->remove_subvolume_files(id); !ok) return ok;
  if (auto ok = catalog_->set_subvolume_generations(gens); !ok) return ok;
  if (auto ok = catalog_->set_pending(!run.complete); !ok) return ok;
  if (auto ok = catalog_->add_run(run); !ok) return ok;
  return catalog_->commit();
}

}  // namespace btrdedupe
