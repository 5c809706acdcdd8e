// The rule that a catalog row still holds for a file (same size, mtime and inode flags),
// shared by full, incremental and windowed runs, and the digest of a scan's states.
#include "src/catalog/catalog_file_state.h"

#include <algorithm>
#include <cmath>

#include "src/read/hash_mix.h"

namespace btrdedupe::catalog_state {
namespace {

int64_t mtime_ns(const ScannedFile& f) {
  return f.mtime_sec * 1000000000LL + f.mtime_nsec;
}

}  // namespace

bool same_state(const CatalogFile& row, const ScannedFile& f) {
  return row.size == f.size && row.mtime_ns == mtime_ns(f) && row.flags == f.inode_flags;
}

bool same_state(const CatalogFile& row, const btrfs::InodeItem& item) {
  return row.size == item.size && row.flags == item.flags &&
         row.mtime_ns == item.mtime.sec * 1000000000LL + item.mtime.nsec;
}

std::unordered_map<uint64_t, FileStateDigest> file_states(const ScanResult& scan) {
  std::unordered_map<uint64_t, FileStateDigest> out;
  for (const auto& f : scan.files) {
    const uint64_t h =
        mix64(f.inode ^ mix64(f.size ^ mix64(static_cast<uint64_t>(mtime_ns(f)))));
    auto& d = out[f.subvolume];
    ++d.count;
    d.sum += h;
    d.xored ^= mix64(h + 0x9E3779B97F4A7C15ULL);
  }
  return out;
}

std::optional<int64_t> unsettled_until(const btrfs::InodeItem& item, double settle_seconds,
                                       int64_t now) {
  if (settle_seconds <= 0) return std::nullopt;
  const int64_t changed = std::max(item.ctime.sec, item.mtime.sec);
  const int64_t settles = changed + static_cast<int64_t>(std::ceil(settle_seconds));
  if (settles <= now) return std::nullopt;
  return settles;
}

}  // namespace btrdedupe::catalog_state
