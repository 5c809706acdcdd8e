// Space a filesystem has reserved for writes in flight (sysfs allocation/*/bytes_may_use).
// It moves the moment a write is buffered, long before the transaction that takes it
// commits, and falls back once writeback is done: how a follower tells that data is still
// landing inside one transaction, whose generation does not move.
#pragma once

#include <cstdint>
#include <string>

#include "btrfs/result.h"

namespace btrfs {

// Data and metadata bytes_may_use of the filesystem `fsid` (8-4-4-4-12 form), summed.
Result<uint64_t> reserved_for_writes(const std::string& fsid);

}  // namespace btrfs
