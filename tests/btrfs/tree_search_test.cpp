// TreeSearch and the item decoders against a real loop-mounted btrfs.
#include "btrfs/tree_search.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "btrfs/csum_tree.h"
#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "btrfs/items.h"
#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tree_search_helpers.h"

namespace btrdedupe::test {
namespace {

class TreeSearch : public BtrfsTest {
 protected:
  std::string q(const std::string& relative) { return shell_quote(path(relative)); }
  // Commits the running transaction so items are in the trees, not in delalloc.
  void commit() { sh("btrfs filesystem sync " + shell_quote(fs().mount_point())); }
  btrfs::Fd root_fd() { return open_or_fail(fs().mount_point(), O_RDONLY | O_DIRECTORY); }
  uint64_t ino(const std::string& relative) { return stat_of(path(relative)).st_ino; }
  // One direct write of `bytes` random bytes at `offset`: one extent, where buffered writes
  // can be split by background writeback.
  void write_direct(const std::string& relative, uint64_t bytes, uint64_t offset = 0) {
    sh("dd if=/dev/urandom of=" + q(relative) + " bs=" + std::to_string(bytes) + " count=1 seek=" +
       std::to_string(offset / bytes) + " iflag=fullblock oflag=direct conv=notrunc status=none");
  }

  std::optional<btrfs::InodeItem> inode_item(int fd, uint64_t objectid) {
    auto items = inode_items(fd, objectid, BTRFS_INODE_ITEM_KEY);
    if (items.size() != 1) {
      ADD_FAILURE() << items.size() << " INODE_ITEMs for inode " << objectid;
      return std::nullopt;
    }
    EXPECT_EQ(items[0].offset, 0u);
    auto decoded = btrfs::decode_inode_item(items[0].data);
    if (!decoded.ok()) {
      ADD_FAILURE() << decoded.error().message();
      return std::nullopt;
    }
    return *decoded;
  }
};

TEST_F(TreeSearch, ReflinkedCopyNamesTheSameDiskExtents) {
  sh("head -c 3145728 /dev/urandom > " + q("orig"));
  sh("cp --reflink=always " + q("orig") + " " + q("copy"));
  commit();
  auto fd = root_fd();
  const auto orig = file_extents(fd.get(), ino("orig"));
  const auto copy = file_extents(fd.get(), ino("copy"));
  ASSERT_FALSE(orig.empty());
  ASSERT_EQ(orig.size(), copy.size());
  uint64_t covered = 0;
  for (size_t i = 0; i < orig.size(); ++i) {
    const auto& a = orig[i];
    const auto& b = copy[i];
    EXPECT_EQ(a.item.type, btrfs::FileExtentType::Regular);
    EXPECT_NE(a.item.disk_bytenr, 0u);
    EXPECT_EQ(a.file_offset, b.file_offset);
    EXPECT_EQ(a.item.disk_bytenr, b.item.disk_bytenr);
    EXPECT_EQ(a.item.disk_num_bytes, b.item.disk_num_bytes);
    EXPECT_EQ(a.item.offset, b.item.offset);
    EXPECT_EQ(a.item.num_bytes, b.item.num_bytes);
    EXPECT_EQ(a.file_offset, covered) << "extents tile the file";
    covered += a.item.num_bytes;
  }
  EXPECT_EQ(covered, 3145728u);
}

TEST_F(TreeSearch, ExtentItemOfAReflinkedExtentCountsBothReferences) {
  write_direct("orig", 1048576);
  sh("cp --reflink=always " + q("orig") + " " + q("copy"));
  commit();
  auto fd = root_fd();
  // One extent usually; a direct write whose buffer page faults midway is split by btrfs into
  // two, so every extent of the file is checked.
  const auto extents = file_extents(fd.get(), ino("orig"));
  ASSERT_FALSE(extents.empty());
  for (const auto& file_extent : extents) {
    const auto& e = file_extent.item;
    SCOPED_TRACE("extent at file offset " + std::to_string(file_extent.file_offset));
    btrfs::SearchKey key;
    key.tree_id = BTRFS_EXTENT_TREE_OBJECTID;
    key.min_objectid = key.max_objectid = e.disk_bytenr;
    key.min_type = key.max_type = BTRFS_EXTENT_ITEM_KEY;
    const auto items = search_all(fd.get(), key).items;
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].offset, e.disk_num_bytes);  // key = (bytenr, EXTENT_ITEM, length)
    auto extent = btrfs::decode_extent_item(items[0].type, items[0].data);
    ASSERT_TRUE(extent.ok()) << extent.error().message();
    EXPECT_TRUE(extent->is_data());
    EXPECT_EQ(extent->refs, 2u);
    EXPECT_EQ(extent->generation, e.generation);
    // Both files live in the top-level subvolume: one EXTENT_DATA_REF per inode.
    std::set<uint64_t> inodes;
    uint32_t counted = 0;
    for (const auto& ref : extent->inline_refs) {
      if (ref.type != BTRFS_EXTENT_DATA_REF_KEY) continue;
      EXPECT_EQ(ref.root, BTRFS_FS_TREE_OBJECTID);
      // The file offset of the referencing item, minus its offset into the extent.
      EXPECT_EQ(ref.offset, file_extent.file_offset - e.offset);
      inodes.insert(ref.objectid);
      counted += ref.count;
    }
    EXPECT_EQ(counted, 2u);
    EXPECT_EQ(inodes, (std::set<uint64_t>{ino("orig"), ino("copy")}));
  }
}

TEST_F(TreeSearch, RegularFileInodeItemMatchesStat) {
  sh("head -c 300000 /dev/urandom > " + q("f"));
  commit();
  auto fd = root_fd();
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  const auto st = stat_of(path("f"));
  auto it = inode_item(fd.get(), st.st_ino);
  ASSERT_TRUE(it);
  EXPECT_EQ(it->size, static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(it->nbytes, 303104u);  // 300000 rounded up to 4 KiB sectors
  EXPECT_EQ(it->nbytes, static_cast<uint64_t>(st.st_blocks) * 512);
  EXPECT_EQ(it->nlink, 1u);
  EXPECT_EQ(it->mode, st.st_mode);
  EXPECT_EQ(it->uid, st.st_uid);
  EXPECT_EQ(it->gid, st.st_gid);
  EXPECT_TRUE(it->is_regular());
  EXPECT_FALSE(it->nodatacow());
  EXPECT_FALSE(it->nodatasum());
  EXPECT_EQ(it->mtime.sec, st.st_mtim.tv_sec);
  EXPECT_EQ(it->mtime.nsec, static_cast<uint32_t>(st.st_mtim.tv_nsec));
  EXPECT_GT(it->generation, 0u);
  EXPECT_GE(it->transid, it->generation);
  EXPECT_LE(it->transid, info->generation);
  const auto extents = file_extents(fd.get(), st.st_ino);
  ASSERT_FALSE(extents.empty());
  for (const auto& e : extents) EXPECT_LE(e.item.generation, info->generation);

  auto dir = inode_item(fd.get(), BTRFS_FIRST_FREE_OBJECTID);  // the subvolume's root dir
  ASSERT_TRUE(dir);
  EXPECT_TRUE(dir->is_directory());
}

TEST_F(TreeSearch, InodeRefNamesTheFileInItsDirectory) {
  sh("mkdir " + q("dir") + " && echo x > " + q("dir/name with spaces"));
  sh("ln " + q("dir/name with spaces") + " " + q("second"));
  commit();
  auto fd = root_fd();
  const auto refs = inode_items(fd.get(), ino("second"), BTRFS_INODE_REF_KEY);
  std::map<std::pair<uint64_t, std::string>, uint64_t> names;  // (parent, name) -> index
  for (const auto& raw : refs) {
    auto decoded = btrfs::decode_inode_refs(raw.offset, raw.data);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message();
    for (const auto& n : *decoded) names[{n.parent, n.name}] = n.index;
  }
  EXPECT_EQ(names.size(), 2u);
  EXPECT_TRUE(names.count({ino("dir"), "name with spaces"}));
  EXPECT_TRUE(names.count({BTRFS_FIRST_FREE_OBJECTID, "second"}));
}

TEST_F(TreeSearch, SparseFileHasNoItemForTheGap) {
  sh("truncate -s 1M " + q("sparse"));
  write_direct("sparse", 8192, 524288);
  commit();
  auto fd = root_fd();
  const auto extents = file_extents(fd.get(), ino("sparse"));
  // mkfs.btrfs defaults to the no-holes feature (since btrfs-progs 5.15): the gaps before
  // and after the data have no EXTENT_DATA item at all, not a disk_bytenr == 0 hole item.
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_EQ(extents[0].file_offset, 524288u);
  EXPECT_EQ(extents[0].item.type, btrfs::FileExtentType::Regular);
  EXPECT_FALSE(extents[0].item.is_hole());
  EXPECT_EQ(extents[0].item.num_bytes, 8192u);
  auto it = inode_item(fd.get(), ino("sparse"));
  ASSERT_TRUE(it);
  EXPECT_EQ(it->size, 1048576u);
  EXPECT_EQ(it->nbytes, 8192u);  // holes use no bytes
}

class TreeSearchWithHoleItems : public TreeSearch {
 protected:
  ImageOptions image_options() const override {
    ImageOptions options;
    options.mkfs_args = {"-O", "^no-holes"};
    return options;
  }
};

TEST_F(TreeSearchWithHoleItems, SparseFileHasExplicitHoleItems) {
  sh("truncate -s 1M " + q("sparse"));
  write_direct("sparse", 8192, 524288);
  commit();
  auto fd = root_fd();
  const auto extents = file_extents(fd.get(), ino("sparse"));
  // Without no-holes every gap is an item with disk_bytenr == 0.
  ASSERT_EQ(extents.size(), 3u);
  EXPECT_EQ(extents[0].file_offset, 0u);
  EXPECT_TRUE(extents[0].item.is_hole());
  EXPECT_EQ(extents[0].item.num_bytes, 524288u);
  EXPECT_EQ(extents[1].file_offset, 524288u);
  EXPECT_FALSE(extents[1].item.is_hole());
  EXPECT_EQ(extents[2].file_offset, 524288u + 8192u);
  EXPECT_TRUE(extents[2].item.is_hole());
  EXPECT_EQ(extents[2].item.num_bytes, 1048576u - 524288u - 8192u);
}

TEST_F(TreeSearch, TinyFileIsAnInlineItemHoldingItsBytes) {
  sh("printf 'hello, inline btrfs\\n' > " + q("tiny"));
  commit();
  auto fd = root_fd();
  const auto extents = file_extents(fd.get(), ino("tiny"));
  ASSERT_EQ(extents.size(), 1u);
  const auto& e = extents[0].item;
  EXPECT_EQ(extents[0].file_offset, 0u);
  ASSERT_TRUE(e.is_inline());
  EXPECT_EQ(e.compression, btrfs::Compression::None);
  EXPECT_EQ(e.length(), 20u);
  EXPECT_EQ(std::string(e.inline_data.begin(), e.inline_data.end()), read_file(path("tiny")));
}

TEST_F(TreeSearch, FallocatedFileIsPrealloc) {
  sh("fallocate -l 1M " + q("pre"));
  commit();
  auto fd = root_fd();
  const auto extents = file_extents(fd.get(), ino("pre"));
  ASSERT_FALSE(extents.empty());
  uint64_t covered = 0;
  for (const auto& e : extents) {
    EXPECT_TRUE(e.item.is_prealloc());
    EXPECT_NE(e.item.disk_bytenr, 0u);
    covered += e.item.num_bytes;
  }
  EXPECT_EQ(covered, 1048576u);
  // Writing into the middle turns that part into a regular extent of the same disk extent.
  write_direct("pre", 4096, 65536);
  commit();
  const auto split = file_extents(fd.get(), ino("pre"));
  ASSERT_EQ(split.size(), 3u);
  EXPECT_TRUE(split[0].item.is_prealloc());
  EXPECT_EQ(split[1].item.type, btrfs::FileExtentType::Regular);
  EXPECT_EQ(split[1].file_offset, 65536u);
  EXPECT_EQ(split[1].item.offset, 65536u);  // into the same on-disk extent
  EXPECT_EQ(split[1].item.disk_bytenr, split[0].item.disk_bytenr);
  EXPECT_TRUE(split[2].item.is_prealloc());
}

TEST_F(TreeSearch, NodatacowFileHasFlagsAndNoSums) {
  sh("touch " + q("nocow") + " && chattr +C " + q("nocow"));
  sh("head -c 262144 /dev/urandom >> " + q("nocow"));
  commit();
  auto fd = root_fd();
  auto it = inode_item(fd.get(), ino("nocow"));
  ASSERT_TRUE(it);
  EXPECT_TRUE(it->nodatacow());
  EXPECT_TRUE(it->nodatasum());
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  const auto extents = file_extents(fd.get(), ino("nocow"));
  ASSERT_FALSE(extents.empty());
  for (const auto& e : extents) {
    ASSERT_EQ(e.item.type, btrfs::FileExtentType::Regular);
    auto sums = btrfs::read_sector_sums(fd.get(), *info, e.item.disk_bytenr, e.item.disk_num_bytes);
    ASSERT_TRUE(sums.ok()) << sums.error().message();
    EXPECT_EQ(sums->sectors(), e.item.disk_num_bytes / info->sectorsize);
    EXPECT_EQ(sums->missing(), sums->sectors());
    EXPECT_FALSE(sums->complete());
  }
}

class TreeSearchZstd : public TreeSearch {
 protected:
  ImageOptions image_options() const override {
    ImageOptions options;
    options.mount_options = "compress-force=zstd";
    return options;
  }
};

TEST_F(TreeSearchZstd, CompressForcedFileHasZstdExtents) {
  sh("yes 'btrfs dedupe compressible line' | head -c 1048576 > " + q("z"));
  commit();
  auto fd = root_fd();
  const auto extents = file_extents(fd.get(), ino("z"));
  ASSERT_FALSE(extents.empty());
  uint64_t covered = 0;
  for (const auto& e : extents) {
    EXPECT_EQ(e.item.compression, btrfs::Compression::Zstd);
    EXPECT_EQ(e.item.type, btrfs::FileExtentType::Regular);
    EXPECT_LT(e.item.disk_num_bytes, e.item.num_bytes);
    EXPECT_LE(e.item.num_bytes, 131072u);  // compressed extents are at most 128 KiB of data
    covered += e.item.num_bytes;
  }
  EXPECT_EQ(covered, 1048576u);
}

// A key-ordered list of every item of the subvolume tree.
btrfs::SearchKey whole_tree() { return {}; }

TEST_F(TreeSearch, TinyBufferContinuesToTheSameItems) {
  sh("mkdir " + q("many") + " && cd " + q("many") +
     " && for i in $(seq 1500); do echo $i > f$i; done");
  commit();
  auto fd = root_fd();
  const auto big = search_all(fd.get(), whole_tree(), 16 << 20);
  const auto tiny = search_all(fd.get(), whole_tree(), 4096);
  // Each file: INODE_ITEM, INODE_REF, inline EXTENT_DATA, and DIR_ITEM + DIR_INDEX.
  EXPECT_GT(big.items.size(), 5 * 1500u);
  EXPECT_EQ(big.ioctl_calls, 1u);  // one batch, with room left: the kernel reached the end
  EXPECT_GT(tiny.ioctl_calls, 20u);
  EXPECT_TRUE(tiny.items == big.items);
  EXPECT_TRUE(std::is_sorted(big.items.begin(), big.items.end(), [](const auto& a, const auto& b) {
    return std::tie(a.objectid, a.type, a.offset) < std::tie(b.objectid, b.type, b.offset);
  }));
}

// A targeted read of one inode: when the answer leaves room for the largest item a leaf can
// hold, the kernel stopped at the end of the box, and no second call is made to hear that.
// When it does not, the search asks again and gets the same items.
TEST_F(TreeSearch, OneCallWhenTheAnswerLeavesRoomForAnyItem) {
  write_direct("f", 1048576);
  write_direct("f", 4096, 409600);
  commit();
  auto fd = root_fd();
  btrfs::SearchKey key;
  key.min_objectid = key.max_objectid = ino("f");
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  const auto roomy = search_all(fd.get(), key, 96 << 10);
  const auto tight = search_all(fd.get(), key, 4096);
  EXPECT_EQ(roomy.ioctl_calls, 1u);
  EXPECT_EQ(tight.ioctl_calls, 2u);
  EXPECT_EQ(roomy.items.size(), 5u);  // INODE_ITEM, INODE_REF, three EXTENT_DATA
  EXPECT_TRUE(roomy.items == tight.items);
}

TEST_F(TreeSearch, BoxFiltersTypesAndOffsets) {
  sh("mkdir " + q("d") + " && for i in $(seq 50); do head -c 100 /dev/urandom > " + q("d") +
     "/f$i; done");
  write_direct("big", 1048576);
  write_direct("big", 4096, 409600);  // copy on write: a new extent in the middle
  commit();
  auto fd = root_fd();
  btrfs::SearchKey key;
  key.min_type = key.max_type = BTRFS_INODE_ITEM_KEY;
  const auto inodes = search_all(fd.get(), key, 4096);
  // 50 files, big, d, and the root directory.
  EXPECT_EQ(inodes.items.size(), 53u);
  for (const auto& i : inodes.items) EXPECT_EQ(i.type, BTRFS_INODE_ITEM_KEY);

  // The overwrite split big's extent in three: [0, 400K) [400K, 404K) [404K, 1M).
  key = {};
  key.min_objectid = key.max_objectid = ino("big");
  key.min_type = key.max_type = BTRFS_EXTENT_DATA_KEY;
  const auto all = search_all(fd.get(), key).items;
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].offset, 0u);
  EXPECT_EQ(all[1].offset, 409600u);
  EXPECT_EQ(all[2].offset, 413696u);
  key.min_offset = 200 << 10;
  key.max_offset = 500 << 10;
  const auto middle = search_all(fd.get(), key, 128).items;
  ASSERT_EQ(middle.size(), 2u);
  EXPECT_TRUE(middle[0] == all[1]);
  EXPECT_TRUE(middle[1] == all[2]);
  key.min_offset = 1;
  key.max_offset = 409600;
  const auto edge = search_all(fd.get(), key, 128).items;  // max_offset is inclusive
  ASSERT_EQ(edge.size(), 1u);
  EXPECT_TRUE(edge[0] == all[1]);
}

TEST_F(TreeSearch, BufferSmallerThanOneItemGrows) {
  sh("head -c 2000 /dev/urandom > " + q("inline2k"));
  commit();
  auto fd = root_fd();
  btrfs::SearchKey key;
  key.min_objectid = key.max_objectid = ino("inline2k");
  key.min_type = key.max_type = BTRFS_EXTENT_DATA_KEY;
  const auto result = search_all(fd.get(), key, 256);
  ASSERT_EQ(result.items.size(), 1u);
  EXPECT_GE(result.ioctl_calls, 3u);  // EOVERFLOW, the item, the empty end
  EXPECT_EQ(result.items[0].data.size(), 21u + 2000u);
  auto e = btrfs::decode_file_extent_item(result.items[0].data);
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_TRUE(e->is_inline());
  EXPECT_EQ(std::string(e->inline_data.begin(), e->inline_data.end()), read_file(path("inline2k")));
}

// One raw TREE_SEARCH_V2 call over the whole subvolume tree: does the kernel itself return
// the item (ino, type, 0) when asked for min_transid?
bool kernel_returns(int fd, uint64_t ino, uint8_t type, uint64_t min_transid) {
  std::vector<uint64_t> buffer((sizeof(btrfs_ioctl_search_args_v2) + (1 << 20)) / 8);
  btrfs_ioctl_search_args_v2 args{};
  args.key.max_objectid = args.key.max_offset = args.key.max_transid = btrfs::kMaxU64;
  args.key.max_type = 255;
  args.key.min_transid = min_transid;
  args.key.nr_items = 4096;
  args.buf_size = 1 << 20;
  std::memcpy(buffer.data(), &args, sizeof args);
  EXPECT_EQ(::ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, buffer.data()), 0) << std::strerror(errno);
  std::memcpy(&args, buffer.data(), sizeof args);
  const auto* results = reinterpret_cast<const uint8_t*>(buffer.data()) + sizeof args;
  size_t pos = 0;
  for (uint32_t i = 0; i < args.key.nr_items; ++i) {
    btrfs_ioctl_search_header h;
    std::memcpy(&h, results + pos, sizeof h);
    if (h.objectid == ino && h.type == type) return true;
    pos += sizeof h + h.len;
  }
  return false;
}

TEST_F(TreeSearch, MinTransidSkipsOlderItems) {
  sh("head -c 65536 /dev/urandom > " + q("old") + " && echo small > " + q("old_inline"));
  commit();
  auto fd = root_fd();
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  const uint64_t before = info->generation;
  ASSERT_GT(before, 0u);
  sh("head -c 65536 /dev/urandom > " + q("new") + " && echo small > " + q("new_inline"));
  commit();

  btrfs::SearchKey key;
  key.min_type = BTRFS_INODE_ITEM_KEY;
  key.max_type = BTRFS_EXTENT_DATA_KEY;
  key.min_transid = before + 1;
  std::set<std::pair<uint64_t, uint8_t>> seen;
  for (const auto& item : search_all(fd.get(), key).items) {
    seen.insert({item.objectid, item.type});
    if (auto gen = btrfs::item_generation(item.type, item.data)) {
      EXPECT_GT(*gen, before);
    }
  }
  for (const char* name : {"new", "new_inline"}) {
    EXPECT_TRUE(seen.count({ino(name), BTRFS_INODE_ITEM_KEY})) << name;
    EXPECT_TRUE(seen.count({ino(name), BTRFS_EXTENT_DATA_KEY})) << name;
  }
  // Old items share the leaf with the new ones, so the kernel returns them...
  EXPECT_TRUE(kernel_returns(fd.get(), ino("old"), BTRFS_INODE_ITEM_KEY, before + 1));
  // ...and TreeSearch drops them.
  for (const char* name : {"old", "old_inline"}) {
    EXPECT_FALSE(seen.count({ino(name), BTRFS_INODE_ITEM_KEY})) << name;
    EXPECT_FALSE(seen.count({ino(name), BTRFS_EXTENT_DATA_KEY})) << name;
  }
  // Without the filter, everything is there.
  key.min_transid = 0;
  seen.clear();
  for (const auto& item : search_all(fd.get(), key).items) seen.insert({item.objectid, item.type});
  EXPECT_TRUE(seen.count({ino("old"), BTRFS_EXTENT_DATA_KEY}));
}

TEST_F(TreeSearch, RootItemsOfSubvolumeAndReadonlySnapshot) {
  sh("btrfs subvolume create " + q("sub"));
  sh("head -c 4096 /dev/urandom > " + q("sub/f"));
  sh("btrfs subvolume snapshot -r " + q("sub") + " " + q("snap"));
  commit();
  auto id_of = [&](const std::string& rel) {
    auto out = sh("btrfs inspect-internal rootid " + q(rel));
    return std::stoull(out);
  };
  const uint64_t sub_id = id_of("sub"), snap_id = id_of("snap");
  ASSERT_GE(sub_id, BTRFS_FIRST_FREE_OBJECTID);
  ASSERT_GT(snap_id, sub_id);
  auto fd = root_fd();
  auto root_item = [&](uint64_t id) -> std::optional<std::pair<uint64_t, btrfs::RootItem>> {
    btrfs::SearchKey key;
    key.tree_id = BTRFS_ROOT_TREE_OBJECTID;
    key.min_objectid = key.max_objectid = id;
    key.min_type = key.max_type = BTRFS_ROOT_ITEM_KEY;
    const auto items = search_all(fd.get(), key).items;
    if (items.size() != 1) {
      ADD_FAILURE() << items.size() << " ROOT_ITEMs for " << id;
      return std::nullopt;
    }
    auto decoded = btrfs::decode_root_item(items[0].data);
    if (!decoded.ok()) {
      ADD_FAILURE() << decoded.error().message();
      return std::nullopt;
    }
    return std::pair{items[0].offset, *decoded};
  };
  const auto sub = root_item(sub_id);
  const auto snap = root_item(snap_id);
  ASSERT_TRUE(sub && snap);
  EXPECT_EQ(sub->first, 0u);                      // a new subvolume's ROOT_ITEM key offset is 0...
  EXPECT_EQ(snap->first, snap->second.otransid);  // ...a snapshot's is its creating transid
  EXPECT_GT(snap->first, 0u);
  EXPECT_TRUE(sub->second.has_v2_fields);
  EXPECT_TRUE(snap->second.has_v2_fields);
  EXPECT_FALSE(sub->second.readonly());
  EXPECT_TRUE(snap->second.readonly());
  EXPECT_EQ(sub->second.root_dirid, BTRFS_FIRST_FREE_OBJECTID);
  EXPECT_EQ(std::memcmp(snap->second.parent_uuid, sub->second.uuid, 16), 0);
  EXPECT_NE(std::memcmp(snap->second.uuid, sub->second.uuid, 16), 0);
  const uint8_t zero[16]{};
  EXPECT_NE(std::memcmp(sub->second.uuid, zero, 16), 0);
  EXPECT_EQ(std::memcmp(sub->second.parent_uuid, zero, 16), 0);
  EXPECT_GE(snap->second.otransid, sub->second.otransid);

  // tree_id 0 follows the fd: a file inside the snapshot searches the snapshot's tree.
  auto inside = open_or_fail(path("snap/f"));
  const auto in_snap = file_extents(inside.get(), ino("snap/f"));
  const auto in_sub = file_extents(fd.get(), ino("sub/f"));  // fd is in the top level...
  EXPECT_TRUE(in_sub.empty());  // ...where that inode number has no extents
  auto sub_fd = open_or_fail(path("sub/f"));
  const auto in_sub2 = file_extents(sub_fd.get(), ino("sub/f"));
  ASSERT_EQ(in_snap.size(), 1u);
  ASSERT_EQ(in_sub2.size(), 1u);
  EXPECT_EQ(in_snap[0].item.disk_bytenr, in_sub2[0].item.disk_bytenr);
}

TEST_F(TreeSearch, NonBtrfsFdGivesTheIoctlError) {
  auto dev_null = open_or_fail("/dev/null");
  btrfs::TreeSearch search(dev_null.get(), whole_tree());
  auto next = search.next();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code, ENOTTY);
  EXPECT_NE(next.error().context.find("BTRFS_IOC_TREE_SEARCH_V2"), std::string::npos);
}

}  // namespace
}  // namespace btrdedupe::test
