// Writes raw items of a mounted btrfs as seed inputs for the item fuzzers, in the input
// layout each fuzz_<target>.cpp expects (tools/fuzz/make-corpus runs it):
//   dump_items MOUNTPOINT OUTDIR [PER_TARGET]
// Reads the root tree, the extent tree, the csum tree and every subvolume's tree with
// TREE_SEARCH_V2 (root needed) and keeps, per target, up to PER_TARGET (default 24) items,
// at most 3 of one size.
#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "btrfs/tree_search.h"

namespace {

struct Out {
  std::string dir;
  size_t per_target = 24;
  std::map<std::string, std::map<size_t, size_t>> kept;  // target -> size -> items kept

  // Up to per_target items per target, at most 3 of any one size (fixed-size items differ
  // in their fields: a directory, a file, a nodatacow file ...).
  void keep(const std::string& target, const std::vector<uint8_t>& bytes, const std::string& name) {
    auto& by_size = kept[target];
    size_t total = 0;
    for (const auto& [size, n] : by_size) total += n;
    if (total >= per_target || by_size[bytes.size()] >= 3) return;
    ++by_size[bytes.size()];
    const std::string d = dir + "/" + target;
    ::mkdir(d.c_str(), 0755);
    const std::string f = d + "/" + name;
    if (std::FILE* out = std::fopen(f.c_str(), "wb")) {
      std::fwrite(bytes.data(), 1, bytes.size(), out);
      std::fclose(out);
    }
  }
};

std::vector<uint8_t> with_prefix(std::vector<uint8_t> prefix, std::span<const uint8_t> data) {
  prefix.insert(prefix.end(), data.begin(), data.end());
  return prefix;
}

std::vector<uint8_t> le64(uint64_t v) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

int dump_tree(int fd, uint64_t tree, uint8_t csum_pick, Out& out, std::vector<uint64_t>* subvols) {
  btrfs::SearchKey key;
  key.tree_id = tree;
  btrfs::TreeSearch search(fd, key, 1 << 20);
  for (;;) {
    auto next = search.next();
    if (!next) {
      std::fprintf(stderr, "tree %llu: %s\n", static_cast<unsigned long long>(tree),
                   next.error().message().c_str());
      return 1;
    }
    if (!*next) return 0;
    const auto& it = **next;
    const std::string name = std::to_string(tree) + "-" + std::to_string(it.objectid) + "-" +
                             std::to_string(it.type) + "-" + std::to_string(it.offset);
    const std::vector<uint8_t> raw(it.data.begin(), it.data.end());
    switch (it.type) {
      case BTRFS_INODE_ITEM_KEY: out.keep("inode_item", raw, name); break;
      case BTRFS_INODE_REF_KEY: out.keep("inode_refs", with_prefix(le64(it.offset), it.data), name); break;
      case BTRFS_INODE_EXTREF_KEY: out.keep("inode_extrefs", raw, name); break;
      case BTRFS_EXTENT_DATA_KEY: out.keep("file_extent", raw, name); break;
      case BTRFS_ROOT_ITEM_KEY:
        out.keep("root_item", raw, name);
        if (subvols && (it.objectid == BTRFS_FS_TREE_OBJECTID ||
                        (it.objectid >= BTRFS_FIRST_FREE_OBJECTID && it.objectid <= BTRFS_LAST_FREE_OBJECTID)))
          subvols->push_back(it.objectid);
        break;
      case BTRFS_EXTENT_ITEM_KEY: out.keep("extent_item", with_prefix({0}, it.data), name); break;
      case BTRFS_METADATA_ITEM_KEY: out.keep("extent_item", with_prefix({1}, it.data), name); break;
      case BTRFS_EXTENT_CSUM_KEY: {
        auto prefixed = with_prefix({csum_pick}, le64(it.offset));
        prefixed.insert(prefixed.end(), it.data.begin(), it.data.end());
        // Long csum items differ only in length: keep them short enough to mutate.
        if (prefixed.size() > 9 + 64 * 32) prefixed.resize(9 + 64 * 32);
        out.keep("csum_item", prefixed, name);
        break;
      }
      default: break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dump_items MOUNTPOINT OUTDIR [PER_TARGET]\n");
    return 2;
  }
  Out out;
  out.dir = argv[2];
  if (argc > 3) out.per_target = std::stoul(argv[3]);
  ::mkdir(out.dir.c_str(), 0755);
  auto fd = btrfs::Fd::open(argv[1], O_RDONLY | O_DIRECTORY);
  if (!fd) {
    std::fprintf(stderr, "%s\n", fd.error().message().c_str());
    return 1;
  }
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) {
    std::fprintf(stderr, "%s\n", info.error().message().c_str());
    return 1;
  }
  // fuzz_csum_item's first byte: 0 -> 4-byte sums, 1 -> 8, 2 -> 32.
  const uint8_t pick = info->csum_size == 4 ? 0 : info->csum_size == 8 ? 1 : 2;
  std::vector<uint64_t> subvols;
  int rc = dump_tree(fd->get(), BTRFS_ROOT_TREE_OBJECTID, pick, out, &subvols);
  rc |= dump_tree(fd->get(), BTRFS_EXTENT_TREE_OBJECTID, pick, out, nullptr);
  rc |= dump_tree(fd->get(), BTRFS_CSUM_TREE_OBJECTID, pick, out, nullptr);
  for (uint64_t id : subvols) rc |= dump_tree(fd->get(), id, pick, out, nullptr);
  for (const auto& [target, by_size] : out.kept) {
    size_t total = 0;
    for (const auto& [size, n] : by_size) total += n;
    std::printf("%s: %zu items\n", target.c_str(), total);
  }
  return rc;
}
