// CatalogSession's incremental runs (the rule is in catalog_session.h, the user's view in
// docs/hashfile.md): find what changed from the leaves written since the recorded
// generations; the changed files' catalogued twins are in catalog_twins.cpp.
#include <algorithm>
#include <ctime>

#include "btrfs/tree_search.h"
#include "src/catalog/catalog_file_state.h"
#include "src/catalog/catalog_session.h"

namespace btrdedupe {
namespace {

using catalog_state::same_state;

using Outcome = IncrementalScan::Outcome;

constexpr int64_t kClockMarginSeconds = 300;

}  // namespace

btrfs::Result<std::optional<ScanResult>> CatalogSession::side_scan(
    btrfs::Result<std::unique_ptr<IncrementalScan>> scan, ScanResult out) {
  // Read whole, as a full scan reads it (the full scan says what is wrong), read-only
  // snapshots folded as in windows: then its twins outside the roots join as an
  // incremental run's.
  if (!scan || !*scan) return std::optional<ScanResult>{};
  incremental_ = std::move(*scan);
  incremental_->add_source_roots(scope_rule_.source_roots());
  for (;;) {
    auto more = incremental_->read_window(out, SIZE_MAX);
    if (!more) return more.error();
    if (!*more) break;
  }
  incremental_->finish(out);
  read_ = TreeRead::RootsWithSources;
  return std::optional<ScanResult>{std::move(out)};
}

btrfs::Result<std::optional<ScanResult>> CatalogSession::incremental_scan(
    const ScanScope& scope, const ScanOptions& options) {
  if (!scope_rule_.may_read_changes_only()) {
    ScanResult out;
    auto scan = reader_->targeted(scope, options, out);
    return side_scan(std::move(scan), std::move(out));
  }
  recorded_generations_ = catalog_->subvolume_generations();
  // A first run, or one that must match every file again (Catalog::pending).
  if (recorded_generations_.empty() || !change_rule_.told_by_generations())
    return std::optional<ScanResult>{};
  ScanResult out;
  auto inc = reader_->targeted(scope, options, out);
  if (!inc || !*inc) return std::optional<ScanResult>{};  // the full scan says what is wrong
  incremental_ = std::move(*inc);
  return find_changed(std::move(out));
}

// A file whose inode changed: added to the scan when its content may have, its row kept
// (renamed, chmod'ed, deduped: same state), moved, or marked stale (gone, out of scope).
btrfs::Result<void> CatalogSession::take_changed_file(ScanResult& scan, const FileKey& key) {
  if (!seen_.insert(key).second) return {};
  const auto row = catalog_->file(key);
  auto state = incremental_->read(key.subvolume, key.inode);
  if (!state) return state.error();
  if (!*state) {  // deleted since the search
    if (row) stale_.insert(key);
    return {};
  }
  if (row && same_state(*row, (*state)->item)) {
    auto in = incremental_->check(key.subvolume, **state);
    if (!in) return in.error();
    if (*in != Outcome::Added)
      stale_.insert(key);
    else if ((*state)->parent != row->parent)
      moved_.emplace_back(key, (*state)->parent);
    return {};
  }
  if (auto settling = left_to_settle(key.subvolume, **state); !settling)
    return settling.error();
  else if (*settling)
    return {};
  auto added = incremental_->add(scan, key.subvolume, key.inode, **state);
  if (!added) return added.error();
  if (*added == Outcome::Added)
    changed_with_row_ += row ? 1 : 0;
  else if (row)
    stale_.insert(key);
  return {};
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
      if (is_directory)
        directories.push_back(inode);
      else if (auto ok = take_changed_file(scan, {sv.id, inode}); !ok)
        return ok.error();
    }
    for (uint64_t dir : directories)
      if (auto ok = check_directory(sv.id, dir); !ok) return ok.error();
  }
  incremental_->finish(scan);
  read_ = TreeRead::Changed;
  return std::optional<ScanResult>{std::move(scan)};
}

// A file written in the last settle_seconds_ may still be being written: reading it now
// could mean reading it again in a moment. It waits, and the recorded generation stays
// below its transid so the next run finds it (the run's syncfs committed it: its transid
// is final until it changes again). Only a file the run would read waits: one the scan
// leaves out (the follower's own hashfile, an --exclude) would otherwise bring a run for
// nothing each time it changes.
btrfs::Result<bool> CatalogSession::left_to_settle(uint64_t subvolume,
                                                   const InodeState& state) {
  const auto& item = state.item;
  const auto settles = catalog_state::unsettled_until(item, settle_seconds_, ::time(nullptr));
  if (!settles) return false;
  auto admitted = incremental_->check(subvolume, state);
  if (!admitted) return admitted.error();
  if (*admitted != Outcome::Added) return false;
  ++files_settling_;
  settled_at_ = std::max(settled_at_, *settles);
  auto [floor, added] = settling_floor_.try_emplace(subvolume, item.transid - 1);
  if (!added) floor->second = std::min(floor->second, item.transid - 1);
  return true;
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

}  // namespace btrdedupe
