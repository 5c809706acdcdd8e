// Encoders of btrfs/items.h: what each writes, its decoder reads back unchanged.
#include <gtest/gtest.h>
#include <linux/btrfs_tree.h>

#include <cstring>
#include <string>
#include <vector>

#include "btrfs/items.h"

namespace btrfs {
namespace {

TEST(itemEncoders, InodeItemRoundTripsEveryField) {
  InodeItem in;
  in.generation = 7;
  in.transid = 42;
  in.size = 123456789012ULL;
  in.nbytes = 123461632ULL;
  in.nlink = 3;
  in.uid = 1000;
  in.gid = 100;
  in.mode = 0100644;
  in.flags = kInodeNoDataSum | kInodeNoDataCow;
  in.sequence = 9;
  in.atime = {1700000001, 11};
  in.ctime = {1700000002, 22};
  in.mtime = {-5, 999999999};
  in.otime = {1700000004, 44};
  const auto bytes = encode_inode_item(in);
  ASSERT_EQ(bytes.size(), sizeof(btrfs_inode_item));
  auto out = decode_inode_item(bytes);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->generation, 7u);
  EXPECT_EQ(out->transid, 42u);
  EXPECT_EQ(out->size, in.size);
  EXPECT_EQ(out->nbytes, in.nbytes);
  EXPECT_EQ(out->nlink, 3u);
  EXPECT_EQ(out->uid, 1000u);
  EXPECT_EQ(out->gid, 100u);
  EXPECT_EQ(out->mode, 0100644u);
  EXPECT_TRUE(out->is_regular());
  EXPECT_TRUE(out->nodatasum() && out->nodatacow());
  EXPECT_EQ(out->sequence, 9u);
  EXPECT_EQ(out->atime.sec, 1700000001);
  EXPECT_EQ(out->ctime.nsec, 22u);
  EXPECT_EQ(out->mtime.sec, -5);
  EXPECT_EQ(out->mtime.nsec, 999999999u);
  EXPECT_EQ(out->otime.sec, 1700000004);
  EXPECT_EQ(item_generation(BTRFS_INODE_ITEM_KEY, bytes), 42u);
}

TEST(itemEncoders, InodeRefsAndExtrefsRoundTripSeveralEntries) {
  const std::string raw("bad\xff\n name", 10);
  const std::vector<InodeName> names{{300, 2, "a"}, {300, 5, raw}, {300, 9, ""}};
  auto refs = decode_inode_refs(300, encode_inode_refs(names));
  ASSERT_TRUE(refs.ok()) << refs.error().message();
  ASSERT_EQ(refs->size(), 3u);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ((*refs)[i].parent, 300u);
    EXPECT_EQ((*refs)[i].index, names[i].index);
    EXPECT_EQ((*refs)[i].name, names[i].name);
  }
  const std::vector<InodeName> ext{{301, 3, "x"}, {302, 4, raw}};
  auto extrefs = decode_inode_extrefs(encode_inode_extrefs(ext));
  ASSERT_TRUE(extrefs.ok()) << extrefs.error().message();
  ASSERT_EQ(extrefs->size(), 2u);
  EXPECT_EQ((*extrefs)[0].parent, 301u);
  EXPECT_EQ((*extrefs)[1].parent, 302u);
  EXPECT_EQ((*extrefs)[1].index, 4u);
  EXPECT_EQ((*extrefs)[1].name, raw);
}

TEST(itemEncoders, DirIndexRoundTripsItsTarget) {
  const auto bytes = encode_dir_index({258, BTRFS_ROOT_ITEM_KEY}, "sub", BTRFS_FT_DIR);
  EXPECT_EQ(bytes.size(), sizeof(btrfs_dir_item) + 3);
  auto t = decode_dir_index(bytes);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->objectid, 258u);
  EXPECT_EQ(t->type, BTRFS_ROOT_ITEM_KEY);
}

TEST(itemEncoders, FileExtentsOfEveryTypeRoundTrip) {
  FileExtentItem regular;
  regular.generation = 12;
  regular.ram_bytes = 131072;
  regular.compression = Compression::Zstd;
  regular.type = FileExtentType::Regular;
  regular.disk_bytenr = 13631488;
  regular.disk_num_bytes = 8192;
  regular.offset = 4096;
  regular.num_bytes = 65536;
  auto r = decode_file_extent_item(encode_file_extent_item(regular));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->generation, 12u);
  EXPECT_EQ(r->ram_bytes, 131072u);
  EXPECT_EQ(r->compression, Compression::Zstd);
  EXPECT_EQ(r->disk_bytenr, 13631488u);
  EXPECT_EQ(r->disk_num_bytes, 8192u);
  EXPECT_EQ(r->offset, 4096u);
  EXPECT_EQ(r->length(), 65536u);

  FileExtentItem prealloc = regular;
  prealloc.type = FileExtentType::Prealloc;
  prealloc.compression = Compression::None;
  auto p = decode_file_extent_item(encode_file_extent_item(prealloc));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->is_prealloc());
  FileExtentItem hole = regular;
  hole.disk_bytenr = hole.disk_num_bytes = 0;
  auto h = decode_file_extent_item(encode_file_extent_item(hole));
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->is_hole());

  const std::string data = "tiny file";
  FileExtentItem in;
  in.generation = 3;
  in.type = FileExtentType::Inline;
  in.ram_bytes = data.size();
  in.inline_data = {reinterpret_cast<const uint8_t*>(data.data()), data.size()};
  const auto bytes = encode_file_extent_item(in);
  auto i = decode_file_extent_item(bytes);
  ASSERT_TRUE(i.ok()) << i.error().message();
  EXPECT_TRUE(i->is_inline());
  EXPECT_EQ(i->length(), data.size());
  EXPECT_EQ(std::string(i->inline_data.begin(), i->inline_data.end()), data);
  EXPECT_EQ(item_generation(BTRFS_EXTENT_DATA_KEY, bytes), 3u);
}

TEST(itemEncoders, RootItemsRoundTripWithAndWithoutV2Fields) {
  RootItem in;
  in.generation = 77;
  in.root_dirid = 256;
  in.bytenr = 30408704;
  in.flags = kRootSubvolReadonly;
  in.refs = 1;
  in.has_v2_fields = true;
  std::memset(in.uuid, 0xab, sizeof in.uuid);
  std::memset(in.parent_uuid, 0xcd, sizeof in.parent_uuid);
  in.ctransid = 70;
  in.otransid = 71;
  in.stransid = 72;
  in.rtransid = 73;
  auto v2 = decode_root_item(encode_root_item(in));
  ASSERT_TRUE(v2.ok()) << v2.error().message();
  EXPECT_TRUE(v2->has_v2_fields);
  EXPECT_TRUE(v2->readonly());
  EXPECT_EQ(v2->generation, 77u);
  EXPECT_EQ(v2->bytenr, 30408704u);
  EXPECT_EQ(v2->uuid[15], 0xab);
  EXPECT_EQ(v2->parent_uuid[0], 0xcd);
  EXPECT_EQ(v2->received_uuid[0], 0);
  EXPECT_EQ(v2->otransid, 71u);
  EXPECT_EQ(v2->rtransid, 73u);

  in.has_v2_fields = false;
  auto legacy = decode_root_item(encode_root_item(in));
  ASSERT_TRUE(legacy.ok()) << legacy.error().message();
  EXPECT_FALSE(legacy->has_v2_fields);
  EXPECT_EQ(legacy->root_dirid, 256u);
  EXPECT_EQ(legacy->otransid, 0u);
}

}  // namespace
}  // namespace btrfs
