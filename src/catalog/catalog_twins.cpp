// fingerprint() of an incremental or side run, and fingerprint_window(): the catalogued files
// that may duplicate the scan's own are looked up by whole-file hash and anchor, by the
// rules of the run's windows (TwinsAcrossWindows), verified against the tree, and added.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "src/catalog/catalog_file_state.h"
#include "src/catalog/catalog_session.h"
#include "src/read/file_extent_index.h"
#include "src/scope/snapshot_family.h"

namespace btrdedupe {
namespace {

using catalog_state::same_state;

using Outcome = IncrementalScan::Outcome;

// Files of windows still to come taken per hash as ahead twins (CatalogSession::
// index_window), and at most this many per file of the window: past them, a copy is
// deduped in its own window, reading its source again. Three bounds a window at four
// times its files: 53.0 MiB peak on 8 copies of linux-source, 51.6 MiB on the backup
// pool at twice its size (four: 55.4 and 59.4 MiB), for the same reads (11,547 against
// 11,563 MiB; 4,651 against 4,781); two read more (11,748 against 11,377, session 8).
constexpr size_t kAheadTwinsPerHash = 15;
constexpr size_t kAheadTwinsPerWindowFile = 3;

}  // namespace

// The catalogued files that may duplicate the scan's own, before they are verified.
struct CatalogSession::Candidates {
  explicit Candidates(TwinsAcrossWindows& across) : twins(across) {}
  TwinsAcrossWindows& twins;  // what the other windows took and kept
  std::unordered_set<FileKey, FileKeyHash> in_scan;
  // Sorted and made unique before use (verify_candidates): a deterministic scan. A set
  // cost a node per twin, ~10% of a window's twin lookups.
  std::vector<std::pair<uint64_t, uint64_t>> files;
  AheadTwins ahead_keys;
  // Earlier twins taken by a whole-file hash that two or more earlier files share.
  std::unordered_set<FileKey, FileKeyHash> grouped_before;
  size_t ahead_bound = 0;
};

btrfs::Result<FingerprintResult> CatalogSession::fingerprint_window(ScanResult& window,
                                                                   CatalogStats& stats,
                                                                   TwinsAcrossWindows& twins,
                                                                   unsigned threads) {
  stats.used = true;
  stats.incremental = false;
  read_threads_ = threads;
  // The whole run's rows in one transaction, as a full run's.
  if (auto ok = catalog_->begin_unless_writing(); !ok) return ok.error();
  return fingerprint_with_twins(window, stats, twins);
}

btrfs::Result<FingerprintResult> CatalogSession::fingerprint_with_twins(
    ScanResult& scan, CatalogStats& stats, TwinsAcrossWindows& twins) {
  stats.upgraded_from = catalog_->upgraded_from();
  twin_short_hashes_.clear();
  // Every file of the scan is new or changed; those an earlier window settled as its ahead
  // twins (whole files) need no sums: their rows stand, and their twins were taken.
  std::vector<bool> own_wanted(scan.files.size(), true);
  for (uint32_t i = 0; i < scan.files.size(); ++i)
    own_wanted[i] = !twins.settled({scan.files[i].subvolume, scan.files[i].inode});
  auto fp = btrdedupe::fingerprint(scan, {}, &own_wanted, read_threads_, csums_);
  if (!fp) return fp.error();
  stats.files_changed = scan.files.size();
  for (uint32_t i = 0; i < scan.files.size(); ++i)
    if (own_wanted[i])
      twins.own_summed({scan.files[i].subvolume, scan.files[i].inode}, fp->files[i]);

  Candidates candidates{twins};
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
  std::vector<bool> wanted(order.size(), false);
  for (uint32_t i = 0; i < order.size(); ++i) wanted[i] = order[i] >= changed;
  roles_ = twins.roles(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    if (!wanted[i]) continue;
    const bool grouped =
        candidates.grouped_before.count({scan.files[i].subvolume, scan.files[i].inode}) > 0;
    roles_.set(i, twins.twin_role(grouped));
  }
  twins.mark_roles(scan, order, changed, candidates.ahead_keys, roles_);
  if (stats.candidates == 0) return fp;
  if (auto ok = sum_twins(scan, order, wanted, twins, *fp); !ok) return ok.error();
  for (uint32_t i = 0; i < order.size(); ++i) {
    if (!wanted[i]) continue;
    const auto known = twin_short_hashes_.find({scan.files[i].subvolume, scan.files[i].inode});
    if (known != twin_short_hashes_.end()) fp->short_hashes[i] = known->second;
  }
  twin_short_hashes_.clear();
  return fp;
}

// The twins' sums (`wanted`, in the order finish() gave) join the scan's own in `fp`: those
// an earlier window kept from the verified twins' table, the rest read now and kept there
// when their file's window has passed.
btrfs::Result<void> CatalogSession::sum_twins(const ScanResult& scan,
                                              const std::vector<uint32_t>& order,
                                              const std::vector<bool>& wanted,
                                              TwinsAcrossWindows& twins,
                                              FingerprintResult& fp) {
  const auto key = [&](size_t i) { return FileKey{scan.files[i].subvolume, scan.files[i].inode}; };
  std::vector<std::optional<FileSumsView>> kept(order.size());
  std::vector<bool> to_read = wanted;
  for (size_t i = 0; i < order.size(); ++i)
    if (wanted[i] && (kept[i] = twins.kept_sums(key(i)))) to_read[i] = false;
  FingerprintResult read;  // of the twins not kept; none: no csum tree opened or searched
  if (std::find(to_read.begin(), to_read.end(), true) != to_read.end()) {
    auto more = btrdedupe::fingerprint(scan, {}, &to_read, read_threads_, csums_);
    if (!more) return more.error();
    read = std::move(*more);
  }
  fp.files = FileSumsTable::gather(order.size(), scan.fs.csum_size, [&](size_t i) {
    return !wanted[i] ? fp.files[order[i]] : kept[i] ? *kept[i] : read.files[i];
  });
  fp.stats.add(read.stats);
  for (size_t i = 0; i < order.size(); ++i)
    if (to_read[i]) twins.twin_summed(key(i), fp.files[i]);
  return {};
}

size_t CatalogSession::consider_twins(const std::vector<FileKey>& keys, bool whole,
                                      Candidates& c) const {
  size_t taken = 0, ahead = 0;
  const FileKey* first_taken = nullptr;
  for (const auto& k : keys) {
    if (c.in_scan.count(k) || stale_.count(k)) continue;
    if (c.twins.in_window_ahead(k)) {
      if (c.twins.taken_ahead(k) || ahead == kAheadTwinsPerHash ||
          c.ahead_keys.size() >= c.ahead_bound)
        continue;  // settled by an earlier window, or left to its own
      c.files.emplace_back(k.subvolume, k.inode);
      auto [it, fresh] = c.ahead_keys.emplace(k, whole);
      if (!fresh) it->second = it->second || whole;
      ++ahead;
      continue;
    }
    if (taken == (whole ? c.twins.twins_per_whole_hash() : c.twins.twins_per_anchor())) {
      if (whole && first_taken) c.grouped_before.insert(*first_taken);
      continue;
    }
    c.files.emplace_back(k.subvolume, k.inode);
    first_taken = &k;
    ++taken;
  }
  return taken;
}

// The rows of the scan's own files (kept until record(), or written now for later windows),
// and the catalogued files with the same whole-file hash or anchors as candidates.
btrfs::Result<void> CatalogSession::put_rows_and_find_twins(const ScanResult& scan,
                                                            const FingerprintResult& fp,
                                                            const std::vector<bool>& own_wanted,
                                                            Candidates& c) {
  const FileExtentIndex index(scan);  // where each file's data lies: its hole map
  // Rows the first pass wrote stand (the same sums make the same row).
  const std::vector<bool> indexed = c.twins.rows_written_ahead()
                                        ? summed_from_csums(scan)
                                        : std::vector<bool>(scan.files.size(), false);
  for (uint32_t i = 0; i < scan.files.size(); ++i) {
    if (!own_wanted[i]) continue;
    const auto& f = scan.files[i];
    Fingerprinted entry = fingerprinted(scan, index, fp.files[i], i);
    size_t rows_with_hash = 0, earlier_whole_twins = 0;
    if (entry.row.whole_hash) {
      const auto keys = catalog_->files_with_hash(*entry.row.whole_hash);
      rows_with_hash = keys.size();
      earlier_whole_twins = consider_twins(keys, true, c);
    }
    if (earlier_whole_twins == 0 || c.twins.anchors_beside_whole_twins())
      for (uint64_t h : entry.anchors) consider_twins(catalog_->files_with_anchor(h), false, c);
    if (indexed[i]) continue;
    // A scratch catalog keeps per whole-file hash the source a later window takes, and one
    // more row, which tells that window that an earlier one held the group
    // (Candidates::grouped_before). Its anchors are those of the rows with its hash: a
    // third copy's row would tell no window anything.
    if (scratch_rows_only(c.twins) && rows_with_hash > c.twins.twins_per_whole_hash()) continue;
    if (c.twins.rows_for_later_windows()) {
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
  std::map<uint64_t, bool> readable;
  std::sort(c.files.begin(), c.files.end());
  c.files.erase(std::unique(c.files.begin(), c.files.end()), c.files.end());
  for (const auto& [subvolume, inode] : c.files) {
    auto [it, fresh] = readable.try_emplace(subvolume, false);
    if (fresh)
      it->second = scope_rule_.reaches_twins_in(scanned.count(subvolume) > 0, [&] {
        return incremental_->has_subvolume(subvolume);
      });
    if (it->second) by_subvolume[subvolume].push_back(inode);
  }
  c.files.clear();
  for (const auto& [subvolume, inodes] : by_subvolume)
    if (auto ok = verify_in_order(scan, subvolume, inodes, family, c.twins); !ok) return ok;
  return {};
}

// The candidates of one subvolume in inode order: those an earlier window verified from
// what it kept (VerifiedTwins), the rest read from the tree together.
btrfs::Result<void> CatalogSession::verify_in_order(ScanResult& scan, uint64_t subvolume,
                                                    const std::vector<uint64_t>& inodes,
                                                    const SnapshotFamily& family,
                                                    TwinsAcrossWindows& twins) {
  std::vector<uint64_t> to_read;
  for (uint64_t inode : inodes)
    if (!twins.holds({subvolume, inode})) to_read.push_back(inode);
  size_t next = 0;  // of `inodes`, the first not verified yet
  const auto kept_below = [&](uint64_t limit) -> btrfs::Result<void> {
    for (; next < inodes.size() && inodes[next] < limit; ++next) {
      const auto state = twins.kept_state({subvolume, inodes[next]});
      if (!state) continue;
      if (auto ok = verify_candidate(scan, subvolume, inodes[next], &*state, family); !ok)
        return ok;
    }
    return {};
  };
  auto read = incremental_->read_each(
      subvolume, to_read, [&](uint64_t inode, const InodeState* state) -> btrfs::Result<void> {
        if (auto ok = kept_below(inode); !ok) return ok;
        ++next;  // this one
        if (state) twins.twin_read({subvolume, inode}, *state);
        return verify_candidate(scan, subvolume, inode, state, family);
      });
  if (!read) return read;
  return kept_below(UINT64_MAX);
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
  if (*added != Outcome::Added && scope_rule_.outside_twins_are_sources()) {
    // Outside the roots of a side run: a source, and its row stays either way.
    auto outside = incremental_->add_outside(scan, subvolume, inode, *state);
    if (!outside) return outside.error();
    if (*outside == Outcome::Added && row->short_hash) twin_short_hashes_[key] = *row->short_hash;
    return {};
  }
  if (*added != Outcome::Added) {
    stale_.insert(key);
    return {};
  }
  if (row->short_hash) twin_short_hashes_[key] = *row->short_hash;
  // A snapshot's file has the original's inode number: same extents, the full
  // scan would have folded it into this one.
  const IncrementalScan::KeptFile kept{inode, static_cast<uint32_t>(scan.files.size() - 1),
                                       state};
  return incremental_->mark_readonly_aliases(scan, family, subvolume, {&kept, 1});
}

}  // namespace btrdedupe
