#include "src/fingerprint/extent_prefetch.h"

#include <fcntl.h>

#include <algorithm>
#include <limits>

#include "btrfs/fd.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {

void ExtentPrefetch::run(std::stop_token stop, size_t ahead) {
  for (size_t b = 0; b < batches_.size(); ++b) {
    {
      std::unique_lock lock(mu_);
      if (!moved_.wait(lock, stop, [&] { return b < taken_ + ahead; })) return;
    }
    issue(batches_[b]);
  }
}

void ExtentPrefetch::taken(size_t b) {
  {
    const std::lock_guard lock(mu_);
    taken_ = std::max(taken_, b + 1);
  }
  moved_.notify_one();
}

// Each extent through its first reference, as the worker will read it; a file that cannot
// be opened is left to the worker, which says why.
void ExtentPrefetch::issue(const std::pair<size_t, size_t>& batch) {
  uint32_t open_file = std::numeric_limits<uint32_t>::max();
  btrfs::Fd fd;
  for (size_t i = batch.first; i < batch.second; ++i) {
    const ExtentSums& e = extents_[to_read_[i]];
    if (e.first_ref == e.end_ref) continue;
    const FileExtent& ref = scan_.extents[e.first_ref];
    if (ref.file != open_file) {
      auto opened = open_scanned_file(scan_, scan_.files[ref.file], false);
      open_file = ref.file;
      fd = opened ? std::move(*opened) : btrfs::Fd();
    }
    if (fd.valid())
      (void)::posix_fadvise(fd.get(), static_cast<off_t>(ref.file_offset),
                            static_cast<off_t>(ref.length), POSIX_FADV_WILLNEED);
  }
}

}  // namespace btrdedupe
