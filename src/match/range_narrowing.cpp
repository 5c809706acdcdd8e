#include "src/match/range_narrowing.h"

namespace btrdedupe {
namespace {

struct Bisection {
  uint64_t sector;
  unsigned max_calls;
  const ShareRange& share;
  NarrowedRange out;

  // [offset, offset+length) is known to differ somewhere: try each half.
  void split(uint64_t offset, uint64_t length) {
    if (length <= sector) {
      out.bytes_unequal += length;
      return;
    }
    const uint64_t half = (length / 2 + sector - 1) / sector * sector;
    try_piece(offset, half);
    try_piece(offset + half, length - half);
  }

  void try_piece(uint64_t offset, uint64_t length) {
    while (length > 0 && !out.gave_up) {
      if (out.calls >= max_calls) {
        out.gave_up = true;
        return;
      }
      ++out.calls;
      auto r = share(offset, length);
      if (!r || r->status == btrfs::DedupeStatus::Error ||
          r->status == btrfs::DedupeStatus::Skipped) {
        out.gave_up = true;
        return;
      }
      if (r->status == btrfs::DedupeStatus::Differs) return split(offset, length);
      if (r->bytes_deduped == 0) return;  // no progress: leave it
      out.bytes_shared += r->bytes_deduped;
      offset += r->bytes_deduped;
      length -= std::min(length, r->bytes_deduped);
    }
  }
};

}  // namespace

NarrowedRange narrow_unequal_range(uint64_t length, uint64_t sector, unsigned max_calls,
                                   const ShareRange& share) {
  Bisection b{sector ? sector : 4096, max_calls, share, {}};
  b.split(0, length);
  return b.out;
}

}  // namespace btrdedupe
