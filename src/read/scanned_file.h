// Opening a file found by the scan, proving it is still the file that was scanned.
#pragma once

#include "btrfs/fd.h"
#include "btrfs/result.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// A scanned file's path relative to its scan root ("" when the root is the file).
std::string relative_path(const ScanResult& scan, const ScannedFile& file);
// Its absolute path.
std::string file_path(const ScanResult& scan, const ScannedFile& file);
// Whether subvolume `id` of the scan is read-only (its files are never destinations).
bool readonly_subvolume(const ScanResult& scan, uint64_t id);
// Whether a run may write into `file` (dedupe into it, rewrite its ranges): not a folded
// read-only snapshot copy, not a source only, not in a read-only subvolume.
bool writable(const ScanResult& scan, const ScannedFile& file);

// Opens `file` read-only (O_NOFOLLOW, O_NOATIME where permitted: reading for fingerprints
// or prefetch must not touch atime) and checks it is the same inode. With `unchanged`,
// also requires the size and mtime recorded by the scan: a file written since then gets
// ESTALE ("changed since the scan") and is never deduped on stale fingerprints.
// A path of PATH_MAX bytes or more (a deep tree) is opened one directory at a time.
btrfs::Result<btrfs::Fd> open_scanned_file(const ScanResult& scan, const ScannedFile& file,
                                           bool unchanged);

// True when the open file `fd` no longer has the size or mtime the scan recorded for `file`
// (it was written after it was opened), or cannot be stat'ed.
bool changed_since_scan(int fd, const ScannedFile& file);

}  // namespace btrdedupe
