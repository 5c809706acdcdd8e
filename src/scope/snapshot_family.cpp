#include "src/scope/snapshot_family.h"

#include <algorithm>

namespace btrdedupe {

SnapshotFamily::SnapshotFamily(const std::vector<btrfs::Subvolume>& scanned) {
  for (size_t i = 0; i < scanned.size(); ++i) {
    const btrfs::Subvolume& snap = scanned[i];
    if (!snap.readonly || !snap.is_snapshot()) continue;
    std::vector<uint64_t> into;
    for (const auto& origin : scanned)
      if (origin.id != snap.id && origin.uuid == snap.parent_uuid) into.push_back(origin.id);
    for (size_t j = 0; j < i; ++j)
      if (scanned[j].readonly && scanned[j].parent_uuid == snap.parent_uuid &&
          scanned[j].id != snap.id && std::find(into.begin(), into.end(), scanned[j].id) == into.end())
        into.push_back(scanned[j].id);
    if (into.empty()) continue;
    for (uint64_t id : into) folded_into_[id].push_back(snap.id);
    folds_into_.emplace(snap.id, std::move(into));
  }
}

const std::vector<uint64_t>& SnapshotFamily::folds_into(uint64_t subvolume) const {
  static const std::vector<uint64_t> kNone;
  auto it = folds_into_.find(subvolume);
  return it == folds_into_.end() ? kNone : it->second;
}

const std::vector<uint64_t>& SnapshotFamily::folded_into(uint64_t subvolume) const {
  static const std::vector<uint64_t> kNone;
  auto it = folded_into_.find(subvolume);
  return it == folded_into_.end() ? kNone : it->second;
}

}  // namespace btrdedupe
