// Whether a file is as its catalog row says (internal to src/catalog*.cpp), from a tree
// scan or from an inode item, and a digest of a scan's file states per subvolume.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "btrfs/items.h"
#include "src/catalog/catalog.h"
#include "src/catalog/catalog_session.h"
#include "src/read/tree_scan.h"

namespace btrdedupe::catalog_state {

bool same_state(const CatalogFile& row, const ScannedFile& f);
bool same_state(const CatalogFile& row, const btrfs::InodeItem& item);
std::unordered_map<uint64_t, FileStateDigest> file_states(const ScanResult& scan);
// When a file changed at `item`'s ctime or mtime (the later) settles: `settle_seconds`
// after it, whole seconds up. nullopt when it has settled by `now` (or settle is 0).
std::optional<int64_t> unsettled_until(const btrfs::InodeItem& item, double settle_seconds,
                                       int64_t now);

}  // namespace btrdedupe::catalog_state
