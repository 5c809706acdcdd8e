#include "btrfs/fiemap.h"

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace btrfs {
namespace {

// Extents asked for per call: bounds the buffer (~28 KiB) whatever the file's layout.
constexpr uint32_t kExtentsPerCall = 512;

// struct fiemap followed by its extent array, in storage aligned for both.
class FiemapBuffer {
 public:
  explicit FiemapBuffer(uint32_t extents)
      : storage_((sizeof(struct fiemap) + extents * sizeof(struct fiemap_extent) +
                  sizeof(uint64_t) - 1) /
                 sizeof(uint64_t)),
        capacity_(extents) {}

  // Clears the header for a new request of [start, start+length).
  struct fiemap* request(uint64_t start, uint64_t length, uint32_t flags) {
    auto* map = header();
    *map = {};
    map->fm_start = start;
    map->fm_length = length;
    map->fm_flags = flags;
    map->fm_extent_count = capacity_;
    return map;
  }
  struct fiemap* header() { return reinterpret_cast<struct fiemap*>(storage_.data()); }

 private:
  std::vector<uint64_t> storage_;
  uint32_t capacity_;
};

FiemapExtent from_kernel(const struct fiemap_extent& e) {
  return FiemapExtent{e.fe_logical, e.fe_physical, e.fe_length, e.fe_flags};
}

}  // namespace

bool FiemapExtent::last() const { return flags & FIEMAP_EXTENT_LAST; }
bool FiemapExtent::shared() const { return flags & FIEMAP_EXTENT_SHARED; }
bool FiemapExtent::inline_data() const { return flags & FIEMAP_EXTENT_DATA_INLINE; }
bool FiemapExtent::unwritten() const { return flags & FIEMAP_EXTENT_UNWRITTEN; }
bool FiemapExtent::encoded() const { return flags & FIEMAP_EXTENT_ENCODED; }
bool FiemapExtent::unmapped() const {
  return flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC);
}

Result<std::vector<FiemapExtent>> fiemap(int fd, uint64_t start, uint64_t length, bool sync) {
  // ~0ULL means "to the end"; any end past 2^64 is the same request.
  const uint64_t end = length > ~0ULL - start ? ~0ULL : start + length;
  std::vector<FiemapExtent> result;
  FiemapBuffer buffer(kExtentsPerCall);
  uint64_t next = start;
  uint32_t flags = sync ? FIEMAP_FLAG_SYNC : 0;
  while (next < end) {
    auto* map = buffer.request(next, end - next, flags);
    if (::ioctl(fd, FS_IOC_FIEMAP, map) != 0) {
      if (errno == EINTR) continue;
      return errno_error("FIEMAP from offset " + std::to_string(next));
    }
    if (map->fm_mapped_extents == 0) break;
    const uint64_t before = next;
    bool done = false;
    for (uint32_t i = 0; i < map->fm_mapped_extents; ++i) {
      const auto& e = map->fm_extents[i];
      // An extent may start before the requested offset: keep only what is new.
      if (!result.empty() && e.fe_logical + e.fe_length <= next) continue;
      result.push_back(from_kernel(e));
      next = e.fe_logical + e.fe_length;
      done = done || result.back().last();
    }
    // No new extent: the kernel repeated itself, and asking again would loop forever.
    if (done || next <= before) break;
    // The first call flushed the file; flushing again per batch would only cost time.
    flags = 0;
  }
  return result;
}

}  // namespace btrfs
