// record() and record_windows(): what each kind of run (full, side, incremental, windowed)
// writes back at its end, and the rule for taking the generations our own dedupe raised.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "btrfs/fd.h"
#include "src/catalog/catalog_file_state.h"
#include "src/catalog/catalog_session.h"

namespace btrdedupe {

using catalog_state::file_states;
using catalog_state::same_state;

btrfs::Result<std::unordered_map<uint64_t, uint64_t>> CatalogSession::generations_after_commit()
    const {
  auto fd = btrfs::Fd::open(first_path_, O_RDONLY | O_NONBLOCK);
  if (fd) ::syncfs(fd->get());
  return reader_->generations(first_path_);
}

btrfs::Result<void> CatalogSession::keep_short_hashes(
    const ScanResult& scan, std::span<const std::pair<uint32_t, uint64_t>> hashes) {
  for (const auto& [i, hash] : hashes) {
    const FileKey key{scan.files[i].subvolume, scan.files[i].inode};
    if (auto it = fingerprinted_.find(key); it != fingerprinted_.end()) {
      it->second.row.short_hash = hash;  // a row record() writes
    } else if (!catalog_->writing()) {
      short_hashes_[key] = hash;  // a catalogued twin's row, updated at record()
    } else {  // rows written already: this run's transaction is open
      if (auto ok = catalog_->set_short_hash(key, hash); !ok) return ok;
    }
  }
  return {};
}

btrfs::Result<void> CatalogSession::write_short_hashes() {
  for (const auto& [key, hash] : short_hashes_)
    if (auto ok = catalog_->set_short_hash(key, hash); !ok) return ok;
  short_hashes_.clear();
  return {};
}

// A side run's record: the rows it fingerprinted (written already by a full scan's
// fingerprint(), kept until now by side_scan's) and the rows of files it found gone, and
// the run. The generations stay those of the catalog's last run of its own roots.
btrfs::Result<void> CatalogSession::record_side_run(const RunRecord& run) {
  if (auto ok = catalog_->begin_unless_writing(); !ok) return ok;
  for (const auto& [key, entry] : fingerprinted_)
    if (auto ok = catalog_->put_file(key, entry.row, entry.anchors); !ok) return ok;
  if (auto ok = write_short_hashes(); !ok) return ok;
  for (const auto& key : stale_)
    if (auto ok = catalog_->remove_file(key); !ok) return ok;
  // Duplicates it left are duplicates of the catalog's scope too; those it did not look
  // at may still wait.
  if (!run.complete)
    if (auto ok = catalog_->set_pending(true); !ok) return ok;
  if (auto ok = catalog_->add_run(run, false); !ok) return ok;
  return catalog_->commit();
}

btrfs::Result<void> CatalogSession::record(const ScanResult& scan, const ScanResult* after,
                                           const RunRecord& run) {
  switch (scope_rule_.record_path(read_)) {
    case RecordPath::Whole:
      return record_whole(scan, after, run);
    case RecordPath::Changed:
      return record_incremental(scan, after, run);
    case RecordPath::Side:
      return record_side_run(run);
    case RecordPath::Windows:
      return record_windows(scan, after, run);
  }
  return record_whole(scan, after, run);
}

// A run that read its trees whole, or read none.
btrfs::Result<void> CatalogSession::record_whole(const ScanResult& scan, const ScanResult* after,
                                                 const RunRecord& run) {
  // Nothing changed, nothing was read, when no transaction is open: only the run is new.
  if (auto ok = catalog_->begin_unless_writing(); !ok) return ok;
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
  return catalog_->commit();
}

btrfs::Result<void> CatalogSession::record_windows(const ScanResult& scan,
                                                   const ScanResult* after,
                                                   const RunRecord& run) {
  if (auto ok = catalog_->begin_unless_writing(); !ok) return ok;
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
  return catalog_->commit();
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
  if (auto ok = write_short_hashes(); !ok) return ok;
  for (const auto& [key, parent] : moved_)
    if (auto ok = catalog_->set_parent(key, parent); !ok) return ok;
  for (const auto& key : stale_)
    if (auto ok = catalog_->remove_file(key); !ok) return ok;
  // Subvolumes deleted (or no longer under the roots) since the last run lose their rows.
  for (const auto& [id, gen] : recorded_generations_)
    if (!gens.count(id))
      if (auto ok = catalog_->remove_subvolume_files(id); !ok) return ok;
  for (const auto& [id, floor] : settling_floor_)
    if (auto it = gens.find(id); it != gens.end()) it->second = std::min(it->second, floor);
  if (auto ok = catalog_->set_subvolume_generations(gens); !ok) return ok;
  if (auto ok = catalog_->set_pending(!run.complete); !ok) return ok;
  if (auto ok = catalog_->add_run(run); !ok) return ok;
  return catalog_->commit();
}

}  // namespace btrdedupe
