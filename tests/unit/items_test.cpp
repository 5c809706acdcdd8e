// Decoders of on-disk items, on hand-built little-endian byte buffers.
#include "btrfs/items.h"

#include <endian.h>
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <array>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>

namespace btrfs {
namespace {

// Not in this machine's UAPI headers (simple quotas, kernel 6.7).
constexpr uint8_t kOwnerRefKey = 172;

// Little-endian byte builder.
class Bytes {
 public:
  Bytes& u8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  Bytes& le16(uint16_t v) { return raw(htole16(v)); }
  Bytes& le32(uint32_t v) { return raw(htole32(v)); }
  Bytes& le64(uint64_t v) { return raw(htole64(v)); }
  Bytes& str(const std::string& s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  const std::vector<uint8_t>& get() const { return b_; }
  operator std::span<const uint8_t>() const { return b_; }  // NOLINT: test convenience

 private:
  template <typename T>
  Bytes& raw(T v) {
    uint8_t tmp[sizeof v];
    std::memcpy(tmp, &v, sizeof v);
    b_.insert(b_.end(), tmp, tmp + sizeof v);
    return *this;
  }
  std::vector<uint8_t> b_;
};

// Puts a little-endian value at `off` of an already sized buffer.
template <typename T>
void put_le(std::vector<uint8_t>& b, size_t off, T v) {
  ASSERT_LE(off + sizeof v, b.size());
  if constexpr (sizeof v == 2) v = htole16(v);
  if constexpr (sizeof v == 4) v = htole32(v);
  if constexpr (sizeof v == 8) v = htole64(v);
  std::memcpy(b.data() + off, &v, sizeof v);
}

std::vector<uint8_t> inode_item_bytes() {
  std::vector<uint8_t> b(sizeof(btrfs_inode_item), 0);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, generation), 7);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, transid), 42);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, size), 123456789012ULL);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, nbytes), 123461632ULL);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, block_group), 0xdeadbeef);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, nlink), 3);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, uid), 1000);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, gid), 100);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, mode), 0100644);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, rdev), 0x55);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, flags), kInodeNoDataSum | kInodeNoDataCow);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, sequence), 9);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, atime), 1700000001);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, atime) + 8, 11);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, ctime), 1700000002);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, ctime) + 8, 22);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, mtime), static_cast<uint64_t>(-5));
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, mtime) + 8, 999999999);
  put_le<uint64_t>(b, offsetof(btrfs_inode_item, otime), 1700000004);
  put_le<uint32_t>(b, offsetof(btrfs_inode_item, otime) + 8, 44);
  return b;
}

std::vector<uint8_t> file_extent_bytes(uint8_t type, uint64_t disk_bytenr,
                                       uint8_t compression = 0) {
  return Bytes()
      .le64(77)            // generation
      .le64(1 << 20)       // ram_bytes
      .u8(compression)
      .u8(0)               // encryption
      .le16(0)             // other_encoding
      .u8(type)
      .le64(disk_bytenr)
      .le64(131072)        // disk_num_bytes
      .le64(8192)          // offset
      .le64(65536)         // num_bytes
      .get();
}

std::vector<uint8_t> inline_extent_bytes(const std::string& data, uint8_t compression = 0,
                                         uint64_t ram_bytes = 0) {
  return Bytes()
      .le64(78)
      .le64(ram_bytes ? ram_bytes : data.size())
      .u8(compression)
      .u8(0)
      .le16(0)
      .u8(BTRFS_FILE_EXTENT_INLINE)
      .str(data)
      .get();
}

std::vector<uint8_t> root_item_bytes(uint64_t generation, uint64_t generation_v2, uint64_t flags) {
  std::vector<uint8_t> b(sizeof(btrfs_root_item), 0);
  put_le<uint32_t>(b, offsetof(btrfs_root_item, inode) + offsetof(btrfs_inode_item, mode), 040755);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, generation), generation);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, root_dirid), 256);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, bytenr), 30474240);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, flags), flags);
  put_le<uint32_t>(b, offsetof(btrfs_root_item, refs), 1);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, generation_v2), generation_v2);
  for (uint8_t i = 0; i < 16; ++i) {
    b[offsetof(btrfs_root_item, uuid) + i] = static_cast<uint8_t>(0x10 + i);
    b[offsetof(btrfs_root_item, parent_uuid) + i] = static_cast<uint8_t>(0x20 + i);
    b[offsetof(btrfs_root_item, received_uuid) + i] = static_cast<uint8_t>(0x30 + i);
  }
  put_le<uint64_t>(b, offsetof(btrfs_root_item, ctransid), 101);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, otransid), 102);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, stransid), 103);
  put_le<uint64_t>(b, offsetof(btrfs_root_item, rtransid), 104);
  return b;
}

// Data extent with an owner ref, an EXTENT_DATA_REF and a SHARED_DATA_REF inline.
std::vector<uint8_t> data_extent_bytes() {
  return Bytes()
      .le64(3).le64(12).le64(BTRFS_EXTENT_FLAG_DATA)
      .u8(kOwnerRefKey).le64(257)
      .u8(BTRFS_EXTENT_DATA_REF_KEY).le64(5).le64(258).le64(4096).le32(2)
      .u8(BTRFS_SHARED_DATA_REF_KEY).le64(30408704).le32(1)
      .get();
}

// Non-skinny tree block: tree_block_info, then a TREE_BLOCK_REF and a SHARED_BLOCK_REF.
std::vector<uint8_t> tree_block_extent_bytes() {
  return Bytes()
      .le64(2).le64(9).le64(BTRFS_EXTENT_FLAG_TREE_BLOCK)
      .le64(256).u8(BTRFS_INODE_ITEM_KEY).le64(0).u8(1)  // first key, level
      .u8(BTRFS_TREE_BLOCK_REF_KEY).le64(5)
      .u8(BTRFS_SHARED_BLOCK_REF_KEY).le64(22020096)
      .get();
}

std::vector<uint8_t> inode_refs_bytes() {
  return Bytes()
      .le64(2).le16(5).str("hello")
      .le64(3).le16(4).str(std::string("w\xff\x00x", 4))
      .get();
}

std::vector<uint8_t> inode_extrefs_bytes() {
  return Bytes().le64(256).le64(2).le16(1).str("a").le64(300).le64(17).le16(3).str("bcd").get();
}

void expect_uuid(const uint8_t* uuid, uint8_t first) {
  for (uint8_t i = 0; i < 16; ++i) EXPECT_EQ(uuid[i], first + i) << "byte " << int{i};
}

TEST(items, InodeItemDecodesEveryField) {
  auto it = decode_inode_item(inode_item_bytes());
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_EQ(it->generation, 7u);
  EXPECT_EQ(it->transid, 42u);
  EXPECT_EQ(it->size, 123456789012ULL);
  EXPECT_EQ(it->nbytes, 123461632ULL);
  EXPECT_EQ(it->nlink, 3u);
  EXPECT_EQ(it->uid, 1000u);
  EXPECT_EQ(it->gid, 100u);
  EXPECT_EQ(it->mode, 0100644u);
  EXPECT_TRUE(it->is_regular());
  EXPECT_FALSE(it->is_directory());
  EXPECT_TRUE(it->nodatasum());
  EXPECT_TRUE(it->nodatacow());
  EXPECT_EQ(it->sequence, 9u);
  EXPECT_EQ(it->atime.sec, 1700000001);
  EXPECT_EQ(it->atime.nsec, 11u);
  EXPECT_EQ(it->ctime.sec, 1700000002);
  EXPECT_EQ(it->ctime.nsec, 22u);
  EXPECT_EQ(it->mtime.sec, -5);  // before the epoch
  EXPECT_EQ(it->mtime.nsec, 999999999u);
  EXPECT_EQ(it->otime.sec, 1700000004);
  EXPECT_EQ(it->otime.nsec, 44u);
}

TEST(items, InodeItemShortGivesEuclean) {
  auto b = inode_item_bytes();
  b.pop_back();
  auto it = decode_inode_item(b);
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.error().code, EUCLEAN);
  EXPECT_EQ(it.error().context, "INODE_ITEM too short: 159 of 160 bytes");
}

TEST(items, InodeRefsDecodeEveryEntryWithRawNames) {
  auto names = decode_inode_refs(256, inode_refs_bytes());
  ASSERT_TRUE(names.ok()) << names.error().message();
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ((*names)[0].parent, 256u);
  EXPECT_EQ((*names)[0].index, 2u);
  EXPECT_EQ((*names)[0].name, "hello");
  EXPECT_EQ((*names)[1].parent, 256u);
  EXPECT_EQ((*names)[1].index, 3u);
  EXPECT_EQ((*names)[1].name, std::string("w\xff\x00x", 4));
}

TEST(items, InodeExtrefsCarryTheirOwnParent) {
  auto names = decode_inode_extrefs(inode_extrefs_bytes());
  ASSERT_TRUE(names.ok()) << names.error().message();
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ((*names)[0].parent, 256u);
  EXPECT_EQ((*names)[0].index, 2u);
  EXPECT_EQ((*names)[0].name, "a");
  EXPECT_EQ((*names)[1].parent, 300u);
  EXPECT_EQ((*names)[1].index, 17u);
  EXPECT_EQ((*names)[1].name, "bcd");
}

TEST(items, DirIndexNamesTheInodeItPointsAt) {
  // btrfs_dir_item: location key (objectid, type, offset), transid, data_len, name_len,
  // type, then the name.
  const Bytes file = Bytes().le64(4242).u8(BTRFS_INODE_ITEM_KEY).le64(0).le64(7).le16(0)
                         .le16(5).u8(1).str("hello");
  auto t = decode_dir_index(file);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->objectid, 4242u);
  EXPECT_EQ(t->type, BTRFS_INODE_ITEM_KEY);
  const Bytes subvolume = Bytes().le64(257).u8(BTRFS_ROOT_ITEM_KEY).le64(~0ULL).le64(7)
                              .le16(0).le16(1).u8(2).str("s");
  auto s = decode_dir_index(subvolume);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->type, BTRFS_ROOT_ITEM_KEY);
  auto short_item = decode_dir_index(Bytes().le64(1).u8(1));
  ASSERT_FALSE(short_item.ok());
  EXPECT_EQ(short_item.error().code, EUCLEAN);
}

TEST(items, NameLengthBeyondTheItemIsRejected) {
  auto refs = decode_inode_refs(256, Bytes().le64(2).le16(65535).str("short"));
  ASSERT_FALSE(refs.ok());
  EXPECT_EQ(refs.error().code, EUCLEAN);
  EXPECT_EQ(refs.error().context, "INODE_REF entry 0 too short: 15 of 65545 bytes");
  // The second entry is the bad one.
  auto ext = decode_inode_extrefs(
      Bytes().le64(256).le64(2).le16(1).str("a").le64(1).le64(1).le16(9).str("ab"));
  ASSERT_FALSE(ext.ok());
  EXPECT_EQ(ext.error().context, "INODE_EXTREF entry 1 too short: 20 of 27 bytes");
  // A trailing partial header.
  auto tail = decode_inode_refs(256, Bytes().le64(2).le16(1).str("a").u8(7));
  ASSERT_FALSE(tail.ok());
  EXPECT_EQ(tail.error().context, "INODE_REF entry 1 too short: 1 of 10 bytes");
  // An item with no entry at all.
  EXPECT_FALSE(decode_inode_refs(256, {}).ok());
  EXPECT_FALSE(decode_inode_extrefs({}).ok());
}

TEST(items, RegularExtent) {
  auto it = decode_file_extent_item(file_extent_bytes(BTRFS_FILE_EXTENT_REG, 13631488));
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_EQ(it->generation, 77u);
  EXPECT_EQ(it->ram_bytes, 1u << 20);
  EXPECT_EQ(it->compression, Compression::None);
  EXPECT_EQ(it->type, FileExtentType::Regular);
  EXPECT_EQ(it->disk_bytenr, 13631488u);
  EXPECT_EQ(it->disk_num_bytes, 131072u);
  EXPECT_EQ(it->offset, 8192u);
  EXPECT_EQ(it->num_bytes, 65536u);
  EXPECT_EQ(it->length(), 65536u);
  EXPECT_FALSE(it->is_hole());
  EXPECT_FALSE(it->is_inline());
  EXPECT_FALSE(it->is_prealloc());
  EXPECT_TRUE(it->inline_data.empty());
}

TEST(items, HolePreallocAndCompressedExtents) {
  auto hole = decode_file_extent_item(file_extent_bytes(BTRFS_FILE_EXTENT_REG, 0));
  ASSERT_TRUE(hole.ok());
  EXPECT_TRUE(hole->is_hole());
  auto prealloc = decode_file_extent_item(file_extent_bytes(BTRFS_FILE_EXTENT_PREALLOC, 4096));
  ASSERT_TRUE(prealloc.ok());
  EXPECT_TRUE(prealloc->is_prealloc());
  EXPECT_FALSE(prealloc->is_hole());
  for (uint8_t c = 0; c <= 3; ++c) {
    auto it = decode_file_extent_item(file_extent_bytes(BTRFS_FILE_EXTENT_REG, 4096, c));
    ASSERT_TRUE(it.ok());
    EXPECT_EQ(static_cast<uint8_t>(it->compression), c);
  }
  EXPECT_STREQ(compression_name(Compression::None), "none");
  EXPECT_STREQ(compression_name(Compression::Zlib), "zlib");
  EXPECT_STREQ(compression_name(Compression::Lzo), "lzo");
  EXPECT_STREQ(compression_name(Compression::Zstd), "zstd");
}

TEST(items, InlineExtentPointsAtItsBytes) {
  const auto b = inline_extent_bytes("tiny file\n");
  auto it = decode_file_extent_item(b);
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_TRUE(it->is_inline());
  EXPECT_EQ(it->length(), 10u);
  EXPECT_EQ(std::string(it->inline_data.begin(), it->inline_data.end()), "tiny file\n");
  EXPECT_EQ(it->inline_data.data(), b.data() + 21);  // a view, not a copy
  EXPECT_EQ(it->disk_bytenr, 0u);
  // Compressed inline data is shorter than ram_bytes.
  auto z = decode_file_extent_item(inline_extent_bytes("zzz", 3, 3000));
  ASSERT_TRUE(z.ok()) << z.error().message();
  EXPECT_EQ(z->compression, Compression::Zstd);
  EXPECT_EQ(z->length(), 3000u);
  EXPECT_EQ(z->inline_data.size(), 3u);
}

TEST(items, MalformedExtentsAreRejected) {
  auto bad_type = file_extent_bytes(3, 4096);
  auto t = decode_file_extent_item(bad_type);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, EUCLEAN);
  EXPECT_EQ(t.error().context, "EXTENT_DATA has unknown type 3");
  auto c = decode_file_extent_item(file_extent_bytes(BTRFS_FILE_EXTENT_REG, 4096, 4));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().context, "EXTENT_DATA has unknown compression 4");
  auto inline_liar = decode_file_extent_item(inline_extent_bytes("abc", 0, 4000));
  ASSERT_FALSE(inline_liar.ok());
  EXPECT_EQ(inline_liar.error().code, EUCLEAN);
  auto short_reg = file_extent_bytes(BTRFS_FILE_EXTENT_REG, 4096);
  short_reg.resize(52);
  auto s = decode_file_extent_item(short_reg);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().context, "EXTENT_DATA too short: 52 of 53 bytes");
  short_reg.resize(20);
  EXPECT_EQ(decode_file_extent_item(short_reg).error().context,
            "EXTENT_DATA too short: 20 of 21 bytes");
}

TEST(items, RootItemWithV2Fields) {
  auto it = decode_root_item(root_item_bytes(900, 900, kRootSubvolReadonly));
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_EQ(it->generation, 900u);
  EXPECT_EQ(it->root_dirid, 256u);
  EXPECT_EQ(it->bytenr, 30474240u);
  EXPECT_EQ(it->refs, 1u);
  EXPECT_TRUE(it->readonly());
  ASSERT_TRUE(it->has_v2_fields);
  expect_uuid(it->uuid, 0x10);
  expect_uuid(it->parent_uuid, 0x20);
  expect_uuid(it->received_uuid, 0x30);
  EXPECT_EQ(it->ctransid, 101u);
  EXPECT_EQ(it->otransid, 102u);
  EXPECT_EQ(it->stransid, 103u);
  EXPECT_EQ(it->rtransid, 104u);
}

TEST(items, LegacyRootItemHasNoV2Fields) {
  auto b = root_item_bytes(900, 900, 0);
  b.resize(offsetof(btrfs_root_item, generation_v2));  // 239 bytes: pre-3.5 kernels
  auto it = decode_root_item(b);
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_EQ(it->generation, 900u);
  EXPECT_FALSE(it->readonly());
  EXPECT_FALSE(it->has_v2_fields);
  EXPECT_EQ(it->otransid, 0u);
  for (auto byte : it->uuid) EXPECT_EQ(byte, 0);  // left zero...
  // ...and a full-size item rewritten by an old kernel has a stale generation_v2.
  auto stale = decode_root_item(root_item_bytes(900, 850, 0));
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->has_v2_fields);
  for (auto byte : stale->parent_uuid) EXPECT_EQ(byte, 0);
  auto tiny = decode_root_item(std::vector<uint8_t>(238, 0));
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.error().context, "ROOT_ITEM too short: 238 of 239 bytes");
}

TEST(items, DataExtentItemWithInlineBackrefs) {
  auto it = decode_extent_item(BTRFS_EXTENT_ITEM_KEY, data_extent_bytes());
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_EQ(it->refs, 3u);
  EXPECT_EQ(it->generation, 12u);
  EXPECT_TRUE(it->is_data());
  ASSERT_EQ(it->inline_refs.size(), 3u);
  const auto& owner = it->inline_refs[0];
  EXPECT_EQ(owner.type, kOwnerRefKey);
  EXPECT_EQ(owner.root, 257u);
  const auto& data = it->inline_refs[1];
  EXPECT_EQ(data.type, BTRFS_EXTENT_DATA_REF_KEY);
  EXPECT_EQ(data.root, 5u);
  EXPECT_EQ(data.objectid, 258u);
  EXPECT_EQ(data.offset, 4096u);
  EXPECT_EQ(data.count, 2u);
  const auto& shared = it->inline_refs[2];
  EXPECT_EQ(shared.type, BTRFS_SHARED_DATA_REF_KEY);
  EXPECT_EQ(shared.offset, 30408704u);
  EXPECT_EQ(shared.count, 1u);
}

TEST(items, TreeBlockExtentItemSkipsTreeBlockInfo) {
  auto it = decode_extent_item(BTRFS_EXTENT_ITEM_KEY, tree_block_extent_bytes());
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_FALSE(it->is_data());
  ASSERT_EQ(it->inline_refs.size(), 2u);
  EXPECT_EQ(it->inline_refs[0].type, BTRFS_TREE_BLOCK_REF_KEY);
  EXPECT_EQ(it->inline_refs[0].root, 5u);
  EXPECT_EQ(it->inline_refs[1].type, BTRFS_SHARED_BLOCK_REF_KEY);
  EXPECT_EQ(it->inline_refs[1].offset, 22020096u);
}

TEST(items, SkinnyMetadataItemHasNoTreeBlockInfo) {
  auto b = Bytes()
               .le64(1).le64(8).le64(BTRFS_EXTENT_FLAG_TREE_BLOCK)
               .u8(BTRFS_TREE_BLOCK_REF_KEY).le64(2);
  auto it = decode_extent_item(BTRFS_METADATA_ITEM_KEY, b);
  ASSERT_TRUE(it.ok()) << it.error().message();
  ASSERT_EQ(it->inline_refs.size(), 1u);
  EXPECT_EQ(it->inline_refs[0].root, 2u);
  // The same bytes read as a non-skinny EXTENT_ITEM lack room for tree_block_info.
  auto wrong = decode_extent_item(BTRFS_EXTENT_ITEM_KEY, b);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().context, "EXTENT_ITEM tree_block_info too short: 33 of 42 bytes");
}

TEST(items, ExtentItemRejectsUnknownBackrefsAndKeyTypes) {
  auto b = Bytes().le64(1).le64(8).le64(BTRFS_EXTENT_FLAG_DATA).u8(180).le64(1);
  auto it = decode_extent_item(BTRFS_EXTENT_ITEM_KEY, b);
  ASSERT_FALSE(it.ok());
  EXPECT_EQ(it.error().code, EUCLEAN);
  EXPECT_EQ(it.error().context, "EXTENT_ITEM has unknown inline backref type 180 at byte 24");
  auto key = decode_extent_item(BTRFS_EXTENT_DATA_KEY, data_extent_bytes());
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().code, EINVAL);
  auto cut = data_extent_bytes();
  cut.resize(cut.size() - 1);
  EXPECT_EQ(decode_extent_item(BTRFS_EXTENT_ITEM_KEY, cut).error().context,
            "EXTENT_ITEM inline backref 2 too short: 12 of 13 bytes");
}

TEST(items, CsumItem) {
  const std::vector<uint8_t> sums{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  auto it = decode_csum_item(1 << 20, sums, 4);
  ASSERT_TRUE(it.ok()) << it.error().message();
  EXPECT_EQ(it->disk_start, 1u << 20);
  EXPECT_EQ(it->sectors(), 3u);
  EXPECT_EQ(it->csum_size, 4u);
  EXPECT_EQ(it->sums.data(), sums.data());
  EXPECT_EQ(decode_csum_item(0, sums, 8).error().code, EUCLEAN);  // 12 is not a multiple of 8
  EXPECT_EQ(decode_csum_item(0, std::span(sums).first(3), 4).error().context,
            "EXTENT_CSUM too short: 3 of 4 bytes");
  EXPECT_EQ(decode_csum_item(0, sums, 0).error().code, EINVAL);
}

TEST(items, ItemGenerationPerType) {
  EXPECT_EQ(item_generation(BTRFS_INODE_ITEM_KEY, inode_item_bytes()), 42u);  // transid
  EXPECT_EQ(item_generation(BTRFS_EXTENT_DATA_KEY, file_extent_bytes(1, 4096)), 77u);
  EXPECT_EQ(item_generation(BTRFS_EXTENT_DATA_KEY, inline_extent_bytes("x")), 78u);
  EXPECT_EQ(item_generation(BTRFS_ROOT_ITEM_KEY, root_item_bytes(900, 900, 0)), 900u);
  EXPECT_EQ(item_generation(BTRFS_EXTENT_ITEM_KEY, data_extent_bytes()), 12u);
  EXPECT_EQ(item_generation(BTRFS_METADATA_ITEM_KEY, data_extent_bytes()), 12u);
  EXPECT_EQ(item_generation(BTRFS_INODE_REF_KEY, inode_refs_bytes()), std::nullopt);
  EXPECT_EQ(item_generation(BTRFS_EXTENT_CSUM_KEY, std::vector<uint8_t>(64, 1)), std::nullopt);
  auto b = inode_item_bytes();
  b.resize(15);
  EXPECT_EQ(item_generation(BTRFS_INODE_ITEM_KEY, b), std::nullopt);
  b.resize(16);
  EXPECT_EQ(item_generation(BTRFS_INODE_ITEM_KEY, b), 42u);
}

// Every decoder, as a function of the bytes: ok / error, never a crash or an over-read
// (run the unit tests under -fsanitize=address to make the latter loud).
struct Decoder {
  const char* name;
  std::function<std::optional<Error>(std::span<const uint8_t>)> run;
};

template <typename R>
std::optional<Error> error_of(const R& r) {
  if (r.ok()) return std::nullopt;
  return r.error();
}

std::vector<Decoder> all_decoders() {
  return {
      {"inode_item", [](auto d) { return error_of(decode_inode_item(d)); }},
      {"inode_refs", [](auto d) { return error_of(decode_inode_refs(256, d)); }},
      {"inode_extrefs", [](auto d) { return error_of(decode_inode_extrefs(d)); }},
      {"file_extent", [](auto d) { return error_of(decode_file_extent_item(d)); }},
      {"root_item", [](auto d) { return error_of(decode_root_item(d)); }},
      {"extent_item",
       [](auto d) { return error_of(decode_extent_item(BTRFS_EXTENT_ITEM_KEY, d)); }},
      {"metadata_item",
       [](auto d) { return error_of(decode_extent_item(BTRFS_METADATA_ITEM_KEY, d)); }},
      {"csum4", [](auto d) { return error_of(decode_csum_item(0, d, 4)); }},
      {"csum32", [](auto d) { return error_of(decode_csum_item(0, d, 32)); }},
      {"generation", [](auto d) {
         for (int t = 0; t < 256; ++t) (void)item_generation(static_cast<uint8_t>(t), d);
         return std::optional<Error>{};
       }},
  };
}

// Copies each prefix into its own allocation so that an over-read leaves the buffer.
void check_every_prefix(const Decoder& decoder, const std::vector<uint8_t>& valid,
                        bool fixed_size) {
  ASSERT_FALSE(decoder.run(valid).has_value()) << decoder.name << " rejects the full item";
  for (size_t n = 0; n < valid.size(); ++n) {
    const std::vector<uint8_t> prefix(valid.begin(), valid.begin() + static_cast<long>(n));
    const auto error = decoder.run(prefix);
    if (fixed_size) {
      ASSERT_TRUE(error.has_value()) << decoder.name << " accepted " << n << " bytes";
    }
    if (error) {
      EXPECT_EQ(error->code, EUCLEAN) << decoder.name << " at " << n << ": " << error->context;
      EXPECT_FALSE(error->context.empty());
    }
  }
}

const Decoder& decoder(const std::string& name) {
  static const auto decoders = all_decoders();
  for (const auto& d : decoders)
    if (d.name == name) return d;
  throw std::invalid_argument(name);
}

TEST(itemsUntrusted, EveryPrefixDecodesOrFailsCleanly) {
  check_every_prefix(decoder("inode_item"), inode_item_bytes(), true);
  check_every_prefix(decoder("inode_refs"), inode_refs_bytes(), false);
  check_every_prefix(decoder("inode_extrefs"), inode_extrefs_bytes(), false);
  check_every_prefix(decoder("file_extent"), file_extent_bytes(BTRFS_FILE_EXTENT_REG, 4096), true);
  check_every_prefix(decoder("file_extent"), file_extent_bytes(BTRFS_FILE_EXTENT_PREALLOC, 4096),
                     true);
  check_every_prefix(decoder("file_extent"), inline_extent_bytes(std::string(2000, 'q')), true);
  check_every_prefix(decoder("root_item"), root_item_bytes(5, 5, 1), false);
  check_every_prefix(decoder("extent_item"), data_extent_bytes(), false);
  check_every_prefix(decoder("extent_item"), tree_block_extent_bytes(), false);
  check_every_prefix(decoder("metadata_item"), data_extent_bytes(), false);
  check_every_prefix(decoder("csum4"), std::vector<uint8_t>(64, 0xab), false);
}

// Prefixes that end at an entry boundary are valid items with fewer entries.
TEST(itemsUntrusted, PrefixesAtEntryBoundariesDecodeFewerEntries) {
  const auto refs = inode_refs_bytes();
  auto first = decode_inode_refs(1, std::span(refs).first(15));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 1u);
  const auto extent = data_extent_bytes();
  auto two = decode_extent_item(BTRFS_EXTENT_ITEM_KEY, std::span(extent).first(24 + 9 + 29));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->inline_refs.size(), 2u);
  const auto full_root = root_item_bytes(5, 5, 1);
  auto root = decode_root_item(std::span(full_root).first(300));
  ASSERT_TRUE(root.ok());
  EXPECT_FALSE(root->has_v2_fields);  // neither legacy nor complete: v2 fields not trusted
}

TEST(itemsUntrusted, RandomBytesNeverCrash) {
  std::mt19937_64 rng(20240611);
  const auto decoders = all_decoders();
  size_t accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> garbage(rng() % 600);
    for (auto& byte : garbage) byte = static_cast<uint8_t>(rng());
    // Bias some rounds towards plausible headers so the deeper paths run too.
    if (round % 3 == 0 && garbage.size() > 24) garbage[16] = static_cast<uint8_t>(rng() % 4);
    constexpr std::array<uint8_t, 5> backref_types{172, 176, 178, 182, 184};
    if (round % 3 == 1 && garbage.size() > 24) garbage[24] = backref_types[rng() % 5];
    for (const auto& d : decoders) {
      const auto error = d.run(garbage);
      if (!error) {
        ++accepted;
        continue;
      }
      EXPECT_TRUE(error->code == EUCLEAN) << d.name << ": " << error->context;
    }
  }
  EXPECT_GT(accepted, 0u);  // some garbage is a valid item, e.g. any 160+ bytes of INODE_ITEM
}

TEST(itemsUntrusted, GarbageNamesStayInsideTheItem) {
  std::mt19937 rng(7);
  for (int round = 0; round < 5000; ++round) {
    std::vector<uint8_t> b(rng() % 80);
    for (auto& byte : b) byte = static_cast<uint8_t>(rng() % 4 == 0 ? rng() : rng() % 16);
    auto refs = decode_inode_refs(9, b);
    if (refs.ok()) {
      size_t total = 0;
      for (const auto& n : *refs) total += 10 + n.name.size();
      EXPECT_EQ(total, b.size());  // entries tile the item exactly
    }
    auto ext = decode_inode_extrefs(b);
    if (ext.ok()) {
      size_t total = 0;
      for (const auto& n : *ext) total += 18 + n.name.size();
      EXPECT_EQ(total, b.size());
    }
  }
}

}  // namespace
}  // namespace btrfs
