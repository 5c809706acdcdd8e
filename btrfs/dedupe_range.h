// FIDEDUPERANGE: ask the kernel to share identical ranges after comparing them itself.
//
// The tail rule (measured on Linux 6.18): offsets must be block (sector) aligned, or that
// destination fails with EINVAL. A length that is not a multiple of the block size is shared
// in full only when the range ends at EOF of BOTH source and destination; otherwise the
// kernel silently rounds the length down to a block boundary (to nothing for a length under
// one block), reports SAME all the same, and sets bytes_deduped to the whole unrounded
// length. dedupe_range() lowers bytes_deduped to what was really shared. Callers plan
// aligned lengths, or exact-to-EOF tails for files of equal size.
//
// Also measured: a destination in a read-only snapshot, opened O_RDONLY, is deduped (SAME,
// then shared); as root a destination opened O_RDONLY works; a nodatacow (NODATASUM) file
// against a COW file, either way round, is EINVAL for that destination, while two
// nodatacow files dedupe normally; a directory destination is EISDIR. A source range past
// the source's EOF, or a source fd not open for reading, fails the whole call with EINVAL.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

// struct file_dedupe_range (24 bytes) + N * file_dedupe_range_info (32 bytes) must fit
// in one page: (4096 - 24) / 32 = 127.
inline constexpr size_t kMaxDedupeDestinations = 127;
// The VFS caps one call at 1 GiB (fs/remap_range.c).
inline constexpr uint64_t kMaxDedupeLength = 1ULL << 30;

struct DedupeDestination {
  int fd = -1;
  uint64_t offset = 0;
};

enum class DedupeStatus {
  Same,     // FILE_DEDUPE_RANGE_SAME: bytes_deduped bytes now share the source's extent
  Differs,  // FILE_DEDUPE_RANGE_DIFFERS: content was not equal, nothing changed
  Error,    // errno in `error`: EINVAL, EPERM, EROFS, ETXTBSY, EAGAIN, EXDEV, ...
  Skipped,  // no call was made for it (e.g. the clamped length was 0)
};

struct DedupeOutcome {
  DedupeStatus status = DedupeStatus::Skipped;
  int error = 0;
  // Same: bytes now sharing the source's extent (the kernel's report, lowered by the tail
  // rule above); 0 otherwise.
  uint64_t bytes_deduped = 0;
};

struct DedupeCall {
  uint64_t requested_length = 0;  // length asked by the caller
  uint64_t issued_length = 0;     // after clamping to the source's EOF and 1 GiB; 0: no call
  std::vector<DedupeOutcome> outcomes;  // one per destination, in order
};

// One FIDEDUPERANGE call: source [src_offset, src_offset+length) against each destination.
// The length is clamped to the source's size (a source range past EOF fails the whole
// call) and to kMaxDedupeLength; a clamped length of 0, or no destination, issues no ioctl
// (outcomes Skipped). bytes_deduped may be less than issued_length (the tail rule): the
// caller continues from there, or stops when what is left is under one block. More than
// kMaxDedupeDestinations destinations is an EINVAL Error without a call; a failure of the
// whole call is an Error with its errno. Per-destination failures are outcomes, not Errors.
Result<DedupeCall> dedupe_range(int src_fd, uint64_t src_offset, uint64_t length,
                                std::span<const DedupeDestination> destinations);

}  // namespace btrfs
