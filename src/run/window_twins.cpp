#include "src/run/window_twins.h"

namespace btrdedupe {

IncrementalScan::FileAdded WindowTwins::as_read() {
  if (!keep_as_read_) return nullptr;
  return [this](uint64_t subvolume, uint64_t inode, const InodeState& state) {
    if (verified_.bytes() < as_read_bytes_) verified_.keep({subvolume, inode}, state);
  };
}

bool WindowTwins::in_window_ahead(const FileKey& key) const {
  return look_ahead_ && !passed(key);
}

void WindowTwins::mark_roles(const ScanResult& scan, const std::vector<uint32_t>& order,
                             size_t own, const AheadTwins& ahead, BatchRoles& roles) {
  if (!look_ahead_) return;
  for (uint32_t i = 0; i < order.size(); ++i) {
    const ScannedFile& f = scan.files[i];
    if (order[i] < own) {
      if (taken_ahead_.contains(f.subvolume, f.inode)) roles.set(i, BatchRole::Settled);
      continue;
    }
    const auto it = ahead.find({f.subvolume, f.inode});
    if (it == ahead.end()) continue;
    roles.set(i, BatchRole::AheadTwin);  // counted here, as this window's own
    taken_ahead_.insert(f.subvolume, f.inode);
    if (it->second) settled_whole_.insert(f.subvolume, f.inode);
  }
}

// Past its window, a file is a source only: as read now, it stays.
void WindowTwins::twin_read(const FileKey& key, const InodeState& state) {
  if (passed(key)) verified_.keep(key, state);
}

void WindowTwins::twin_summed(const FileKey& key, FileSumsView sums) {
  if (passed(key)) verified_.keep_sums(key, sums);
}

// Only the files kept as read have a state to go with these sums (keep_sums needs one).
void WindowTwins::own_summed(const FileKey& key, FileSumsView sums) {
  if (keep_as_read_) verified_.keep_sums(key, sums);
}

}  // namespace btrdedupe
