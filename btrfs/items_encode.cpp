// Encoders of on-disk btrfs items (declared in btrfs/items.h), the inverse of its decoders.
#include <endian.h>
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "btrfs/items.h"

namespace btrfs {
namespace {

// A zeroed item of a fixed size, filled field by field at the on-disk offsets.
class ItemBytes {
 public:
  explicit ItemBytes(size_t size) : b_(size, 0) {}
  void u8(size_t off, uint8_t v) { b_.at(off) = v; }
  void le16(size_t off, uint16_t v) { put(off, htole16(v)); }
  void le32(size_t off, uint32_t v) { put(off, htole32(v)); }
  void le64(size_t off, uint64_t v) { put(off, htole64(v)); }
  void timespec(size_t off, const Timespec& t) {
    le64(off + offsetof(btrfs_timespec, sec), static_cast<uint64_t>(t.sec));
    le32(off + offsetof(btrfs_timespec, nsec), t.nsec);
  }
  void bytes(size_t off, const void* data, size_t n) {
    if (n) std::memcpy(b_.data() + off, data, n);
  }
  void append(std::string_view s) { b_.insert(b_.end(), s.begin(), s.end()); }
  std::vector<uint8_t> take() { return std::move(b_); }

 private:
  // Every offset is a field's inside the struct the item was sized for.
  template <typename T>
  void put(size_t off, T v) {
    std::memcpy(b_.data() + off, &v, sizeof v);
  }
  std::vector<uint8_t> b_;
};

uint16_t name_length(std::string_view name) {
  return static_cast<uint16_t>(std::min<size_t>(name.size(), UINT16_MAX));
}

}  // namespace

std::vector<uint8_t> encode_inode_item(const InodeItem& it) {
  ItemBytes b(sizeof(btrfs_inode_item));
  b.le64(offsetof(btrfs_inode_item, generation), it.generation);
  b.le64(offsetof(btrfs_inode_item, transid), it.transid);
  b.le64(offsetof(btrfs_inode_item, size), it.size);
  b.le64(offsetof(btrfs_inode_item, nbytes), it.nbytes);
  b.le32(offsetof(btrfs_inode_item, nlink), it.nlink);
  b.le32(offsetof(btrfs_inode_item, uid), it.uid);
  b.le32(offsetof(btrfs_inode_item, gid), it.gid);
  b.le32(offsetof(btrfs_inode_item, mode), it.mode);
  b.le64(offsetof(btrfs_inode_item, flags), it.flags);
  b.le64(offsetof(btrfs_inode_item, sequence), it.sequence);
  b.timespec(offsetof(btrfs_inode_item, atime), it.atime);
  b.timespec(offsetof(btrfs_inode_item, ctime), it.ctime);
  b.timespec(offsetof(btrfs_inode_item, mtime), it.mtime);
  b.timespec(offsetof(btrfs_inode_item, otime), it.otime);
  return b.take();
}

std::vector<uint8_t> encode_inode_refs(std::span<const InodeName> names) {
  std::vector<uint8_t> out;
  for (const InodeName& n : names) {
    ItemBytes b(sizeof(btrfs_inode_ref));
    b.le64(offsetof(btrfs_inode_ref, index), n.index);
    b.le16(offsetof(btrfs_inode_ref, name_len), name_length(n.name));
    b.append(std::string_view(n.name).substr(0, name_length(n.name)));
    const auto entry = b.take();
    out.insert(out.end(), entry.begin(), entry.end());
  }
  return out;
}

std::vector<uint8_t> encode_inode_extrefs(std::span<const InodeName> names) {
  std::vector<uint8_t> out;
  for (const InodeName& n : names) {
    ItemBytes b(sizeof(btrfs_inode_extref));
    b.le64(offsetof(btrfs_inode_extref, parent_objectid), n.parent);
    b.le64(offsetof(btrfs_inode_extref, index), n.index);
    b.le16(offsetof(btrfs_inode_extref, name_len), name_length(n.name));
    b.append(std::string_view(n.name).substr(0, name_length(n.name)));
    const auto entry = b.take();
    out.insert(out.end(), entry.begin(), entry.end());
  }
  return out;
}

std::vector<uint8_t> encode_dir_index(const DirEntryTarget& target, std::string_view name,
                                      uint8_t file_type) {
  ItemBytes b(sizeof(btrfs_dir_item));
  constexpr size_t location = offsetof(btrfs_dir_item, location);
  b.le64(location + offsetof(btrfs_disk_key, objectid), target.objectid);
  b.u8(location + offsetof(btrfs_disk_key, type), target.type);
  b.le16(offsetof(btrfs_dir_item, name_len), name_length(name));
  b.u8(offsetof(btrfs_dir_item, type), file_type);
  b.append(name.substr(0, name_length(name)));
  return b.take();
}

std::vector<uint8_t> encode_file_extent_item(const FileExtentItem& it) {
  constexpr size_t header = offsetof(btrfs_file_extent_item, disk_bytenr);
  ItemBytes b(it.is_inline() ? header : sizeof(btrfs_file_extent_item));
  b.le64(offsetof(btrfs_file_extent_item, generation), it.generation);
  b.le64(offsetof(btrfs_file_extent_item, ram_bytes), it.ram_bytes);
  b.u8(offsetof(btrfs_file_extent_item, compression), static_cast<uint8_t>(it.compression));
  b.u8(offsetof(btrfs_file_extent_item, encryption), it.encryption);
  b.le16(offsetof(btrfs_file_extent_item, other_encoding), it.other_encoding);
  b.u8(offsetof(btrfs_file_extent_item, type), static_cast<uint8_t>(it.type));
  if (it.is_inline()) {
    b.append({reinterpret_cast<const char*>(it.inline_data.data()), it.inline_data.size()});
    return b.take();
  }
  b.le64(offsetof(btrfs_file_extent_item, disk_bytenr), it.disk_bytenr);
  b.le64(offsetof(btrfs_file_extent_item, disk_num_bytes), it.disk_num_bytes);
  b.le64(offsetof(btrfs_file_extent_item, offset), it.offset);
  b.le64(offsetof(btrfs_file_extent_item, num_bytes), it.num_bytes);
  return b.take();
}

std::vector<uint8_t> encode_root_item(const RootItem& it) {
  ItemBytes b(it.has_v2_fields ? sizeof(btrfs_root_item)
                               : offsetof(btrfs_root_item, generation_v2));
  b.le64(offsetof(btrfs_root_item, generation), it.generation);
  b.le64(offsetof(btrfs_root_item, root_dirid), it.root_dirid);
  b.le64(offsetof(btrfs_root_item, bytenr), it.bytenr);
  b.le64(offsetof(btrfs_root_item, flags), it.flags);
  b.le32(offsetof(btrfs_root_item, refs), it.refs);
  if (!it.has_v2_fields) return b.take();
  b.le64(offsetof(btrfs_root_item, generation_v2), it.generation);
  b.bytes(offsetof(btrfs_root_item, uuid), it.uuid, sizeof it.uuid);
  b.bytes(offsetof(btrfs_root_item, parent_uuid), it.parent_uuid, sizeof it.parent_uuid);
  b.bytes(offsetof(btrfs_root_item, received_uuid), it.received_uuid, sizeof it.received_uuid);
  b.le64(offsetof(btrfs_root_item, ctransid), it.ctransid);
  b.le64(offsetof(btrfs_root_item, otransid), it.otransid);
  b.le64(offsetof(btrfs_root_item, stransid), it.stransid);
  b.le64(offsetof(btrfs_root_item, rtransid), it.rtransid);
  return b.take();
}

}  // namespace btrfs
