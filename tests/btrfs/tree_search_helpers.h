// Helpers shared by the tree search and csum tree integration tests.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/items.h"
#include "btrfs/tree_search.h"
#include "tests/btrfs/kernel_test_util.h"

namespace btrdedupe::test {

// A TreeItem with its bytes copied out of the search buffer.
struct OwnedItem {
  uint64_t objectid = 0;
  uint8_t type = 0;
  uint64_t offset = 0;
  uint64_t transid = 0;
  std::vector<uint8_t> data;

  bool operator==(const OwnedItem&) const = default;
};

struct SearchResult {
  std::vector<OwnedItem> items;
  uint64_t ioctl_calls = 0;
};

// Runs a whole search; fails the test (non-fatally) on an error.
inline SearchResult search_all(int fd, const btrfs::SearchKey& key,
                               size_t buffer_bytes = 256 * 1024) {
  SearchResult out;
  btrfs::TreeSearch search(fd, key, buffer_bytes);
  for (;;) {
    auto next = search.next();
    if (!next.ok()) {
      ADD_FAILURE() << next.error().message();
      break;
    }
    if (!*next) break;
    const auto& item = **next;
    out.items.push_back({item.objectid, item.type, item.offset, item.transid,
                         {item.data.begin(), item.data.end()}});
  }
  out.ioctl_calls = search.ioctl_calls();
  return out;
}

// All items of one type of one inode, in the subvolume that `fd` is in.
inline std::vector<OwnedItem> inode_items(int fd, uint64_t ino, uint8_t type) {
  btrfs::SearchKey key;
  key.min_objectid = key.max_objectid = ino;
  key.min_type = key.max_type = type;
  return search_all(fd, key).items;
}

struct DecodedExtent {
  uint64_t file_offset = 0;  // key offset
  btrfs::FileExtentItem item;
  std::vector<uint8_t> bytes;  // keeps inline_data valid
};

// Decoded EXTENT_DATA items of an inode; the inline_data spans point into `bytes`.
inline std::vector<DecodedExtent> file_extents(int fd, uint64_t ino) {
  std::vector<DecodedExtent> out;
  for (auto& raw : inode_items(fd, ino, BTRFS_EXTENT_DATA_KEY)) {
    DecodedExtent e;
    e.file_offset = raw.offset;
    e.bytes = std::move(raw.data);
    auto decoded = btrfs::decode_file_extent_item(e.bytes);
    if (!decoded.ok()) {
      ADD_FAILURE() << decoded.error().message();
      continue;
    }
    e.item = *decoded;
    out.push_back(std::move(e));  // moving a vector keeps its storage: inline_data stays valid
  }
  return out;
}

inline struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

}  // namespace btrdedupe::test
