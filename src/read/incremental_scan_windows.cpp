// IncrementalScan's windowed reading (declared in incremental_scan.h): the full scan read
// in windows of files, for runs too large to hold whole. Apart from the targeted reads of
// an incremental run because it walks the trees in order, chunk by chunk, and folds
// read-only snapshot files through their snapshot family as it goes.
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "btrfs/tree_source.h"
#include "src/read/incremental_scan.h"
#include "src/scope/inode_count_estimate.h"
#include "src/scope/scan_admission.h"
#include "src/read/tree_warmup.h"

namespace btrdedupe {
namespace {

// A window's chunk of `files` regular files spans about as many inode numbers (the rest
// are directories, and files folded into others); its warm-up covers twice that, and the
// walk reads on past it as before (cold, one leaf at a time).
uint64_t warmup_span(size_t files) { return 2 * static_cast<uint64_t>(files) + 1024; }

}  // namespace

btrfs::Result<bool> IncrementalScan::read_window(ScanResult& out, size_t max_files,
                                                 const FileAdded& added) {
  directory_nodes_.clear();  // a new window has its own path table
  if (!family_) family_.emplace(options_.fold_readonly_aliases ? out.subvolumes
                                                               : std::vector<btrfs::Subvolume>{});
  for (; window_place_ < places_.size(); ++window_place_, window_next_ = 0) {
    const uint64_t subvolume = places_[window_place_].subvolume;
    // A subvolume reached by two places is read once (place() puts a file under the first).
    bool earlier = false;
    for (size_t i = 0; i < window_place_; ++i) earlier = earlier || places_[i].subvolume == subvolume;
    if (earlier) continue;
    auto next = read_chunks(out, subvolume, max_files, added);
    if (!next) return next.error();
    window_next_ = *next;
    if (window_next_ != 0) return true;  // the window is full
    if (out.files.size() >= max_files) {
      ++window_place_;
      window_next_ = 0;
      return window_place_ < places_.size();
    }
  }
  return false;
}

// One walk of the subvolume's tree from window_next_ until the window is full or the tree
// ends; the files are added in chunks of the room left (files folded or out of scope take
// none of it). A walk per chunk cost its own warm-up and a fresh search whose 1 MiB result
// area was mostly thrown away: with a third of linux-source's files inline, a window took
// ~10 ever smaller chunks to fill. The result: where the next window goes on (0: the tree
// ended).
btrfs::Result<uint64_t> IncrementalScan::read_chunks(ScanResult& out, uint64_t subvolume,
                                                     size_t max_files, const FileAdded& added) {
  // Bounded too when the window is not (a side run reads its roots in one).
  constexpr size_t kChunkFiles = 16384;
  const auto room = [&] {
    return std::min(kChunkFiles, max_files - std::min(max_files, out.files.size()));
  };
  size_t chunk_room = room();
  // The window's leaves read ahead of the walk, as a whole scan's are (TreeWarmup): cold,
  // a window read one leaf at a time took 5.1 s for 4 copies of linux-source where the
  // whole scan's part took 1.3 s. Bounded to what the room left needs, so the threads
  // never run ahead into leaves the cache would drop before the next window; started
  // again further on when a chunk ends with its room not read ahead (most files left
  // out: inline, under --min-size, excluded).
  std::optional<TreeWarmup> warmup;
  uint64_t warmed_to = 0;
  const auto warm_from = [&](uint64_t from) {
    warmup.reset();  // its threads joined before the next start
    warmed_to = from + std::min<uint64_t>(warmup_span(chunk_room), BTRFS_LAST_FREE_OBJECTID - from);
    warmup.emplace(*trees_, subvolume_inodes_range(subvolume, from, warmed_to),
                   options_.warmup_threads, /*with_leader=*/true, from);
  };
  warm_from(std::max<uint64_t>(window_next_, BTRFS_FIRST_FREE_OBJECTID));
  Chunk chunk;
  btrfs::Result<void> added_chunk;
  auto next = inodes(subvolume).read_from(window_next_, [&](uint64_t inode, InodeState& state) {
    warmup->leader_at(inode);
    if (state.item.is_regular()) chunk.emplace_back(inode, std::move(state));
    if (chunk.size() < chunk_room) return true;
    added_chunk = add_chunk(out, subvolume, chunk, added);
    chunk.clear();
    chunk_room = room();
    if (!added_chunk || chunk_room == 0) return false;
    if (inode >= warmed_to || warmed_to - inode < warmup_span(chunk_room)) warm_from(inode);
    return true;
  });
  warmup.reset();  // the window is read: what is left of the tree is the next's
  if (!next) return next.error();
  if (!added_chunk) return added_chunk.error();
  if (!chunk.empty())  // the tree ended first
    if (auto ok = add_chunk(out, subvolume, chunk, added); !ok) return ok.error();
  return *next;
}

bool IncrementalScan::window_passed(uint64_t subvolume, uint64_t inode) const {
  for (size_t i = 0; i < places_.size(); ++i) {
    if (places_[i].subvolume != subvolume) continue;  // read at its first place
    if (i != window_place_) return i < window_place_;
    return window_next_ != 0 && inode < window_next_;
  }
  return true;
}

btrfs::Result<void> IncrementalScan::add_chunk(
    ScanResult& out, uint64_t subvolume, Chunk& chunk, const FileAdded& added) {
  std::vector<bool> folded(chunk.size(), false);
  chunk_files_.assign(chunk.size(), kNotAdded);
  if (auto ok = fold_chunk(out, subvolume, chunk, folded); !ok) return ok;
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (folded[i]) continue;
    auto outcome = place(&out, subvolume, chunk[i].first, chunk[i].second);
    if (!outcome) return outcome.error();
    if (*outcome == Outcome::Added) {
      chunk_files_[i] = static_cast<uint32_t>(out.files.size() - 1);
      if (added) added(subvolume, chunk[i].first, chunk[i].second);
    }
    // Left out as the whole scan leaves them out, and counted likewise.
    if (*outcome == Outcome::Excluded) count_left_out(Admission::Excluded, out);
    if (*outcome == Outcome::Small) count_left_out(Admission::Small, out);
    // Inline, hole-only and prealloc-only files count as the whole scan counts them.
    if (*outcome == Outcome::NoData) {
      out.passed_over.add(chunk[i].second.passed_over);
      ++out.files_without_extents;
    }
  }
  return mark_aliases(out, subvolume, chunk);
}

// A read-only snapshot's file folds into the first subvolume of folds_into() whose file of
// the same inode maps the same extents and is in scope, as the whole scan's layout index
// would fold it; one with no extent at all is passed over likewise.
btrfs::Result<void> IncrementalScan::fold_chunk(
    ScanResult& out, uint64_t subvolume,
    const Chunk& chunk, std::vector<bool>& folded) {
  const auto& into = family_->folds_into(subvolume);
  if (into.empty()) return {};
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (!chunk[i].second.extents.empty()) continue;
    auto outcome = check(subvolume, chunk[i].second);
    if (!outcome) return outcome.error();
    if (*outcome != Outcome::NoData) continue;
    folded[i] = true;
    ++out.passed_over.readonly_aliases;
    out.passed_over.add(chunk[i].second.passed_over);
  }
  for (uint64_t twin : into) {
    std::vector<uint64_t> open;  // inodes not folded yet, ascending as the chunk is
    std::vector<size_t> at;
    for (size_t i = 0; i < chunk.size(); ++i)
      if (!folded[i]) open.push_back(chunk[i].first), at.push_back(i);
    if (open.empty()) break;
    size_t next = 0;
    auto read = read_each(twin, open, [&](uint64_t inode, const InodeState* state) -> btrfs::Result<void> {
      while (next < open.size() && open[next] < inode) ++next;
      const size_t i = at[next++];
      if (!state || !same_layout(chunk[i].second, *state)) return {};
      auto outcome = check(twin, *state);
      if (!outcome) return outcome.error();
      if (*outcome == Outcome::Added) folded[i] = true, ++out.passed_over.readonly_aliases;
      return {};
    });
    if (!read) return read;
  }
  return {};
}

// The files of the chunk that read-only snapshots fold into (their origin's, or a kept
// snapshot file later snapshots still hold) say so: their extents stay referenced.
btrfs::Result<void> IncrementalScan::mark_aliases(
    ScanResult& out, uint64_t subvolume,
    const Chunk& chunk) {
  std::vector<KeptFile> kept;
  for (size_t i = 0; i < chunk.size(); ++i)
    if (chunk_files_[i] != kNotAdded)
      kept.push_back({chunk[i].first, chunk_files_[i], &chunk[i].second});
  return mark_readonly_aliases(out, *family_, subvolume, kept);
}

btrfs::Result<void> IncrementalScan::mark_readonly_aliases(ScanResult& out,
                                                           const SnapshotFamily& family,
                                                           uint64_t subvolume,
                                                           std::span<const KeptFile> kept) {
  const auto& snapshots = family.folded_into(subvolume);
  if (kept.empty() || snapshots.empty()) return {};
  std::vector<uint64_t> inodes;
  for (const auto& k : kept) inodes.push_back(k.inode);
  for (uint64_t snap : snapshots) {
    // Earlier choices of folds_into(snap) were refused already when this file is kept
    // (or this is the origin, the first choice): the same layout here is where it folds.
    size_t next = 0;
    auto mark = [&](uint64_t inode, const InodeState* state) -> btrfs::Result<void> {
      while (next < kept.size() && kept[next].inode < inode) ++next;
      const KeptFile& k = kept[next++];
      if (!state || !same_layout(*k.state, *state)) return {};
      out.files[k.file].readonly_alias = true;
      out.readonly_alias_subvolumes.add(k.file, snap);
      return {};
    };
    if (auto read = read_each(snap, inodes, mark); !read) return read;
  }
  return {};
}

double IncrementalScan::read_fraction() {
  if (places_.empty() || window_place_ >= places_.size()) return 1.0;
  const uint64_t subvolume = places_[window_place_].subvolume;
  auto it = highest_inode_.find(subvolume);
  if (it == highest_inode_.end())
    it = highest_inode_.emplace(subvolume, highest_objectid(*trees_, subvolume)).first;
  constexpr uint64_t kFirstInode = 256;  // BTRFS_FIRST_FREE_OBJECTID
  double within = 0;
  if (it->second > kFirstInode && window_next_ > kFirstInode)
    within = std::min(1.0, static_cast<double>(window_next_ - kFirstInode) /
                               static_cast<double>(it->second - kFirstInode));
  return (static_cast<double>(window_place_) + within) / static_cast<double>(places_.size());
}

uint64_t IncrementalScan::estimated_files() {
  std::set<uint64_t> folding;  // a pool may hold thousands of snapshots: looked up once
  if (options_.fold_readonly_aliases)
    for (const auto& sv : all_)
      if (sv.readonly) folding.insert(sv.id);
  std::vector<SubvolumeFiles> subvolumes;
  std::set<uint64_t> counted;
  for (const Place& p : places_)
    if (counted.insert(p.subvolume).second)
      subvolumes.push_back({estimate_regular_files(*trees_, p.subvolume),
                            folding.count(p.subvolume) > 0});
  return files_held_at_once(subvolumes);
}

}  // namespace btrdedupe
