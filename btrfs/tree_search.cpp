#include "btrfs/tree_search.h"

#include <linux/btrfs.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <tuple>

#include "btrfs/items.h"

namespace btrfs {
namespace {

constexpr size_t kMaxResultBytes = 16 << 20;  // the kernel's cap for TREE_SEARCH_V2
constexpr size_t kMinResultBytes = sizeof(btrfs_ioctl_search_header);
constexpr size_t kArgsBytes = sizeof(btrfs_ioctl_search_args_v2);
constexpr size_t kMaxItemBytes = 64 << 10;  // a leaf's data area is below the 64 KiB nodesize cap
static_assert(kArgsBytes % sizeof(uint64_t) == 0, "results must start 8-byte aligned");

size_t words_for(size_t result_bytes) {
  return (kArgsBytes + result_bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t);
}

std::string key_string(uint64_t objectid, uint64_t type, uint64_t offset) {
  return "(" + std::to_string(objectid) + " " + std::to_string(type) + " " +
         std::to_string(offset) + ")";
}

// The ioctl's arguments for `key`: at most `nr_items` items in `buf_size` bytes of results.
btrfs_ioctl_search_args_v2 search_args(const SearchKey& key, uint32_t nr_items,
                                       uint64_t buf_size) {
  btrfs_ioctl_search_args_v2 args{};
  args.key.tree_id = key.tree_id;
  args.key.min_objectid = key.min_objectid;
  args.key.max_objectid = key.max_objectid;
  args.key.min_type = key.min_type;
  args.key.max_type = key.max_type;
  args.key.min_offset = key.min_offset;
  args.key.max_offset = key.max_offset;
  args.key.min_transid = key.min_transid;
  args.key.max_transid = key.max_transid;
  args.key.nr_items = nr_items;
  args.buf_size = buf_size;
  return args;
}

}  // namespace

TreeSearch::TreeSearch(int fd, const SearchKey& key, size_t buffer_bytes)
    : fd_(fd), box_(key), key_(key) {
  allocate(words_for(std::clamp(buffer_bytes, kMinResultBytes, kMaxResultBytes)));
}

void TreeSearch::allocate(size_t words) {
  // Not zeroed: the kernel writes what is read back (a targeted read makes many searches).
  buffer_ = std::make_unique_for_overwrite<uint64_t[]>(words);
  words_ = words;
}

Result<void> TreeSearch::fill() {
  range_ended_ = false;
  for (;;) {
    const size_t capacity = words_ * sizeof(uint64_t) - kArgsBytes;
    // nr_items: bounded by the buffer instead.
    btrfs_ioctl_search_args_v2 args = search_args(key_, UINT32_MAX, capacity);
    // memcpy in and out: the buffer is uint64_t storage, not a btrfs_ioctl_search_args_v2.
    std::memcpy(buffer_.get(), &args, sizeof args);
    ++calls_;
    const int rc = ::ioctl(fd_, BTRFS_IOC_TREE_SEARCH_V2, buffer_.get());
    const int err = errno;
    std::memcpy(&args, buffer_.get(), sizeof args);
    if (rc == 0) {
      pending_ = args.key.nr_items;
      pos_ = 0;
      end_ = capacity;
      // The kernel stops when the next item does not fit, or at the end of the box. With
      // room left for the largest item a leaf can hold, it was the end: no second call
      // just to be told so (half the calls of a targeted read).
      size_t used = 0;
      const auto* results = reinterpret_cast<const uint8_t*>(buffer_.get()) + kArgsBytes;
      for (uint32_t i = 0; i < pending_ && used + sizeof(btrfs_ioctl_search_header) <= capacity;
           ++i) {
        btrfs_ioctl_search_header header;
        std::memcpy(&header, results + used, sizeof header);
        used += sizeof header + header.len;
      }
      range_ended_ = used + sizeof(btrfs_ioctl_search_header) + kMaxItemBytes <= capacity;
      return {};
    }
    if (err != EOVERFLOW || capacity >= kMaxResultBytes) {
      // Tree search is the one privileged step (btrdedupe reads the filesystem's own trees
      // instead of walking directories): say so instead of a bare "Operation not permitted".
      const char* hint = err == EPERM ? " (needs root: CAP_SYS_ADMIN is required to search "
                                        "the filesystem's trees)"
                                      : "";
      return Error{err, "BTRFS_IOC_TREE_SEARCH_V2 in tree " + std::to_string(key_.tree_id) +
                            " from key " +
                            key_string(key_.min_objectid, key_.min_type, key_.min_offset) +
                            " with a " + std::to_string(capacity) + "-byte buffer" + hint};
    }
    // One item did not fit; the kernel says in buf_size how much it needs.
    const size_t wanted_bytes = std::max<size_t>(capacity * 2, args.buf_size);
    allocate(words_for(std::min(wanted_bytes, kMaxResultBytes)));
  }
}

// The smallest key after `item` that lies inside the caller's box: lets the kernel skip
// the keys the box excludes instead of walking them.
void TreeSearch::advance_past(const TreeItem& item) {
  uint64_t objectid = item.objectid, offset = item.offset;
  unsigned type = item.type;
  const bool type_in_box = type >= box_.min_type && type <= box_.max_type;
  if (type_in_box && offset < box_.max_offset) {
    offset = std::max(offset + 1, box_.min_offset);
  } else if (type < box_.max_type) {
    type = std::max<unsigned>(type + 1, box_.min_type);
    offset = box_.min_offset;
  } else if (objectid < box_.max_objectid) {
    ++objectid;
    type = box_.min_type;
    offset = box_.min_offset;
  } else {
    done_ = true;
    return;
  }
  if (std::tie(objectid, type, offset) >
      std::make_tuple(box_.max_objectid, unsigned{box_.max_type}, box_.max_offset)) {
    done_ = true;
    return;
  }
  key_.min_objectid = objectid;
  key_.min_type = static_cast<uint8_t>(type);
  key_.min_offset = offset;
}

bool TreeSearch::wanted(const TreeItem& item) const {
  if (item.objectid < box_.min_objectid || item.objectid > box_.max_objectid) return false;
  if (item.type < box_.min_type || item.type > box_.max_type) return false;
  if (item.offset < box_.min_offset || item.offset > box_.max_offset) return false;
  if (box_.min_transid > 0) {
    // The kernel filters whole leaves; an old item in a recently written leaf gets here.
    const auto generation = item_generation(item.type, item.data);
    if (generation && *generation < box_.min_transid) return false;
  }
  return true;
}

Result<std::optional<TreeItem>> TreeSearch::next() {
  const uint8_t* results = reinterpret_cast<const uint8_t*>(buffer_.get()) + kArgsBytes;
  for (;;) {
    if (pending_ == 0) {
      if (done_ || range_ended_) return std::optional<TreeItem>{};
      if (auto filled = fill(); !filled) return filled.error();
      results = reinterpret_cast<const uint8_t*>(buffer_.get()) + kArgsBytes;
      if (pending_ == 0) {
        done_ = true;
        return std::optional<TreeItem>{};
      }
    }
    btrfs_ioctl_search_header header;
    if (end_ - pos_ < sizeof header) {
      done_ = true;
      pending_ = 0;
      return Error{EUCLEAN, "BTRFS_IOC_TREE_SEARCH_V2 result header too short: " +
                                std::to_string(end_ - pos_) + " of " +
                                std::to_string(sizeof header) + " bytes"};
    }
    std::memcpy(&header, results + pos_, sizeof header);
    pos_ += sizeof header;
    if (end_ - pos_ < header.len) {
      done_ = true;
      pending_ = 0;
      return Error{EUCLEAN, "BTRFS_IOC_TREE_SEARCH_V2 item " +
                                key_string(header.objectid, header.type, header.offset) +
                                " too short: " + std::to_string(end_ - pos_) + " of " +
                                std::to_string(header.len) + " bytes"};
    }
    TreeItem item;
    item.objectid = header.objectid;
    item.type = static_cast<uint8_t>(header.type);
    item.offset = header.offset;
    item.transid = header.transid;
    item.data = {results + pos_, header.len};
    pos_ += header.len;
    if (--pending_ == 0) advance_past(item);
    if (wanted(item)) return std::optional<TreeItem>{item};
  }
}

Result<std::optional<ItemKey>> first_item_key(int fd, const SearchKey& key) {
  // Room for the largest item a leaf (at most 64 KiB) can hold: no EOVERFLOW.
  constexpr size_t kResultBytes = (64 << 10) + sizeof(btrfs_ioctl_search_header);
  std::vector<uint64_t> buffer(words_for(kResultBytes));
  btrfs_ioctl_search_args_v2 args = search_args(key, 1, kResultBytes);
  std::memcpy(buffer.data(), &args, sizeof args);
  if (::ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, buffer.data()) != 0)
    return errno_error("BTRFS_IOC_TREE_SEARCH_V2 (one item) in tree " +
                       std::to_string(key.tree_id) + " from key " +
                       key_string(key.min_objectid, key.min_type, key.min_offset));
  std::memcpy(&args, buffer.data(), sizeof args);
  if (args.key.nr_items == 0) return std::optional<ItemKey>{};
  btrfs_ioctl_search_header header;
  std::memcpy(&header, reinterpret_cast<const uint8_t*>(buffer.data()) + kArgsBytes,
              sizeof header);
  return std::optional<ItemKey>{
      ItemKey{header.objectid, static_cast<uint8_t>(header.type), header.offset}};
}

}  // namespace btrfs
