// Compressed extents that hold the same compressed bytes: the same algorithm, the same
// length on disk and the same checksum for every on-disk sector. Decompressing the same
// bytes gives the same data, so one of them is read for its sums and its twins take them
// without a read. Two copies written through the same compression (a `compress=zstd`
// filesystem receiving an unshared copy) pair up this way; a copy written otherwise (plain,
// another algorithm, another level) does not, and is read as before, so nothing a full
// read would match is lost. The checksum tree is the only input: no data is read here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "btrfs/result.h"
#include "btrfs/tree_source.h"
#include "src/fingerprint/extent_sums.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct CompressedTwin {
  size_t twin = 0;  // index into the extents: takes the sums of
  size_t read = 0;  // this one, which is read (the one of its group with the most sectors)
};

// The twins among the compressed extents of `extents` (sorted by disk address, as
// fingerprint() builds them), each with the extent of its group that is read. Extents
// without a checksum for every on-disk sector have no twin. Adds its ioctl calls to
// *searches.
btrfs::Result<std::vector<CompressedTwin>> compressed_twins(btrfs::TreeSource& csums,
                                                            const ScanResult& scan,
                                                            const std::vector<ExtentSums>& extents,
                                                            uint64_t* searches);

}  // namespace btrdedupe
