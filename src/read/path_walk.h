// The second reader: a walk of a root's directories (openat, getdents, statx) and each
// regular file's FIEMAP, for what tree search does not serve: an ordinary user (tree
// search needs CAP_SYS_ADMIN) and XFS. It makes the ScanResult a tree scan makes, so every
// later stage is the same; what it cannot know it says in the result:
// - no checksum tree: every file is marked nodatasum, so the fingerprint reads its data;
// - physical identity is FIEMAP's address (btrfs: disk_bytenr + offset, XFS: the block),
//   so two files share an extent when they map the same bytes from the same start;
// - an extent FIEMAP calls SHARED may have references outside the walk, and a compressed
//   one's disk size is not told: FileExtent::refs_unknown, never counted as freed;
// - subvolumes are known by their st_dev (btrfs: their id and read-only flag, which any
//   user may ask); nested ones are walked only with ScanOptions::recursive; other
//   filesystems mounted below are never entered.
#pragma once

#include <string>

#include "btrfs/result.h"
#include "src/read/tree_scan.h"
#include "src/read/walk_kernel.h"

namespace btrdedupe {

// Walks `root` (a directory, or one regular file) on btrfs or XFS. Files the caller may
// not read are counted (PassedOver::unreadable); as an ordinary user, files it may
// not dedupe into are kept as sources only (ScannedFile::not_ours).
// `kernel` answers the filesystem's kind and identity, each file's extents and the
// subvolumes; listing, statx and opening are the machine's own.
// Errors: `root` missing, or on a filesystem without FIDEDUPERANGE that btrdedupe reads.
btrfs::Result<ScanResult> walk_root(const std::string& root, const ScanOptions& options,
                                    const WalkKernel& kernel);
// On the machine's kernel (machine_walk_kernel).
btrfs::Result<ScanResult> walk_root(const std::string& root, const ScanOptions& options);

}  // namespace btrdedupe
