#include "btrfs/items.h"

#include <endian.h>
#include <linux/btrfs_tree.h>

#include <cstddef>
#include <cstring>

namespace btrfs {
namespace {

// Simple-quota owner ref (kernel 6.7+); not yet in the UAPI headers of this machine
// (fs/btrfs/accessors.h, include/uapi/linux/btrfs_tree.h of newer kernels).
constexpr uint8_t kExtentOwnerRefKey = 172;  // BTRFS_EXTENT_OWNER_REF_KEY

// Raw little-endian loads. Callers have checked `off + sizeof(T) <= d.size()`.
uint8_t u8_at(std::span<const uint8_t> d, size_t off) { return d[off]; }

uint16_t le16_at(std::span<const uint8_t> d, size_t off) {
  uint16_t v;
  std::memcpy(&v, d.data() + off, sizeof v);
  return le16toh(v);
}

uint32_t le32_at(std::span<const uint8_t> d, size_t off) {
  uint32_t v;
  std::memcpy(&v, d.data() + off, sizeof v);
  return le32toh(v);
}

uint64_t le64_at(std::span<const uint8_t> d, size_t off) {
  uint64_t v;
  std::memcpy(&v, d.data() + off, sizeof v);
  return le64toh(v);
}

Error too_short(const std::string& what, size_t have, size_t need) {
  return Error{EUCLEAN, what + " too short: " + std::to_string(have) + " of " +
                            std::to_string(need) + " bytes"};
}

Error malformed(const std::string& what) { return Error{EUCLEAN, what}; }

Timespec timespec_at(std::span<const uint8_t> d, size_t off) {
  Timespec t;
  t.sec = static_cast<int64_t>(le64_at(d, off + offsetof(btrfs_timespec, sec)));
  t.nsec = le32_at(d, off + offsetof(btrfs_timespec, nsec));
  return t;
}

// Size of one inline backref including its type byte (fs/btrfs: btrfs_extent_inline_ref_size);
// 0 for types that cannot be inline.
size_t inline_ref_size(uint8_t type) {
  constexpr size_t header = sizeof(btrfs_extent_inline_ref);  // type + offset
  constexpr size_t type_byte = offsetof(btrfs_extent_inline_ref, offset);
  switch (type) {
    case BTRFS_TREE_BLOCK_REF_KEY:
    case BTRFS_SHARED_BLOCK_REF_KEY:
    case kExtentOwnerRefKey: return header;
    case BTRFS_SHARED_DATA_REF_KEY: return header + sizeof(btrfs_shared_data_ref);
    case BTRFS_EXTENT_DATA_REF_KEY:
      // The data ref takes the place of the offset field.
      return type_byte + sizeof(btrfs_extent_data_ref);
    default: return 0;
  }
}

// Decodes one inline backref whose bytes (type byte first) are known to be complete.
ExtentBackref decode_inline_ref(std::span<const uint8_t> r) {
  constexpr size_t off = offsetof(btrfs_extent_inline_ref, offset);
  ExtentBackref ref;
  ref.type = u8_at(r, offsetof(btrfs_extent_inline_ref, type));
  switch (ref.type) {
    case BTRFS_TREE_BLOCK_REF_KEY:
    case kExtentOwnerRefKey: ref.root = le64_at(r, off); break;
    case BTRFS_SHARED_BLOCK_REF_KEY: ref.offset = le64_at(r, off); break;
    case BTRFS_SHARED_DATA_REF_KEY:
      ref.offset = le64_at(r, off);
      ref.count =
          le32_at(r, sizeof(btrfs_extent_inline_ref) + offsetof(btrfs_shared_data_ref, count));
      break;
    case BTRFS_EXTENT_DATA_REF_KEY:
      ref.root = le64_at(r, off + offsetof(btrfs_extent_data_ref, root));
      ref.objectid = le64_at(r, off + offsetof(btrfs_extent_data_ref, objectid));
      ref.offset = le64_at(r, off + offsetof(btrfs_extent_data_ref, offset));
      ref.count = le32_at(r, off + offsetof(btrfs_extent_data_ref, count));
      break;
    default: break;
  }
  return ref;
}

}  // namespace

Result<InodeItem> decode_inode_item(std::span<const uint8_t> d) {
  if (d.size() < sizeof(btrfs_inode_item))
    return too_short("INODE_ITEM", d.size(), sizeof(btrfs_inode_item));
  InodeItem it;
  it.generation = le64_at(d, offsetof(btrfs_inode_item, generation));
  it.transid = le64_at(d, offsetof(btrfs_inode_item, transid));
  it.size = le64_at(d, offsetof(btrfs_inode_item, size));
  it.nbytes = le64_at(d, offsetof(btrfs_inode_item, nbytes));
  it.nlink = le32_at(d, offsetof(btrfs_inode_item, nlink));
  it.uid = le32_at(d, offsetof(btrfs_inode_item, uid));
  it.gid = le32_at(d, offsetof(btrfs_inode_item, gid));
  it.mode = le32_at(d, offsetof(btrfs_inode_item, mode));
  it.flags = le64_at(d, offsetof(btrfs_inode_item, flags));
  it.sequence = le64_at(d, offsetof(btrfs_inode_item, sequence));
  it.atime = timespec_at(d, offsetof(btrfs_inode_item, atime));
  it.ctime = timespec_at(d, offsetof(btrfs_inode_item, ctime));
  it.mtime = timespec_at(d, offsetof(btrfs_inode_item, mtime));
  it.otime = timespec_at(d, offsetof(btrfs_inode_item, otime));
  return it;
}

Result<std::vector<InodeName>> decode_inode_refs(uint64_t parent, std::span<const uint8_t> d) {
  constexpr size_t header = sizeof(btrfs_inode_ref);
  std::vector<InodeName> names;
  size_t pos = 0;
  // An item holds at least one entry, so an empty item is malformed too.
  do {
    const std::string what = "INODE_REF entry " + std::to_string(names.size());
    const auto rest = d.subspan(pos);
    if (rest.size() < header) return too_short(what, rest.size(), header);
    const size_t name_len = le16_at(rest, offsetof(btrfs_inode_ref, name_len));
    if (rest.size() < header + name_len) return too_short(what, rest.size(), header + name_len);
    InodeName n;
    n.parent = parent;
    n.index = le64_at(rest, offsetof(btrfs_inode_ref, index));
    n.name.assign(reinterpret_cast<const char*>(rest.data() + header), name_len);
    names.push_back(std::move(n));
    pos += header + name_len;
  } while (pos < d.size());
  return names;
}

Result<DirEntryTarget> decode_dir_index(std::span<const uint8_t> d) {
  constexpr size_t header = sizeof(btrfs_dir_item);
  if (d.size() < header) return too_short("DIR_INDEX item", d.size(), header);
  DirEntryTarget t;
  t.objectid = le64_at(d, offsetof(btrfs_dir_item, location) + offsetof(btrfs_disk_key, objectid));
  t.type = u8_at(d, offsetof(btrfs_dir_item, location) + offsetof(btrfs_disk_key, type));
  return t;
}

Result<std::vector<InodeName>> decode_inode_extrefs(std::span<const uint8_t> d) {
  constexpr size_t header = sizeof(btrfs_inode_extref);
  std::vector<InodeName> names;
  size_t pos = 0;
  do {
    const std::string what = "INODE_EXTREF entry " + std::to_string(names.size());
    const auto rest = d.subspan(pos);
    if (rest.size() < header) return too_short(what, rest.size(), header);
    const size_t name_len = le16_at(rest, offsetof(btrfs_inode_extref, name_len));
    if (rest.size() < header + name_len) return too_short(what, rest.size(), header + name_len);
    InodeName n;
    n.parent = le64_at(rest, offsetof(btrfs_inode_extref, parent_objectid));
    n.index = le64_at(rest, offsetof(btrfs_inode_extref, index));
    n.name.assign(reinterpret_cast<const char*>(rest.data() + header), name_len);
    names.push_back(std::move(n));
    pos += header + name_len;
  } while (pos < d.size());
  return names;
}

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Zlib: return "zlib";
    case Compression::Lzo: return "lzo";
    case Compression::Zstd: return "zstd";
  }
  return "unknown";
}

Result<FileExtentItem> decode_file_extent_item(std::span<const uint8_t> d) {
  // Inline data starts where disk_bytenr would be.
  constexpr size_t header = offsetof(btrfs_file_extent_item, disk_bytenr);
  if (d.size() < header) return too_short("EXTENT_DATA", d.size(), header);
  FileExtentItem it;
  it.generation = le64_at(d, offsetof(btrfs_file_extent_item, generation));
  it.ram_bytes = le64_at(d, offsetof(btrfs_file_extent_item, ram_bytes));
  const uint8_t compression = u8_at(d, offsetof(btrfs_file_extent_item, compression));
  it.encryption = u8_at(d, offsetof(btrfs_file_extent_item, encryption));
  it.other_encoding = le16_at(d, offsetof(btrfs_file_extent_item, other_encoding));
  const uint8_t type = u8_at(d, offsetof(btrfs_file_extent_item, type));
  // An unknown value would make every later field meaningless; the kernel refuses them too.
  if (compression > static_cast<uint8_t>(Compression::Zstd))
    return malformed("EXTENT_DATA has unknown compression " + std::to_string(compression));
  if (type > BTRFS_FILE_EXTENT_PREALLOC)
    return malformed("EXTENT_DATA has unknown type " + std::to_string(type));
  it.compression = static_cast<Compression>(compression);
  it.type = static_cast<FileExtentType>(type);

  if (it.is_inline()) {
    it.inline_data = d.subspan(header);
    // length() trusts ram_bytes, so hold it to what the tree checker demands.
    if (it.compression == Compression::None && it.ram_bytes != it.inline_data.size())
      return malformed("EXTENT_DATA inline item holds " + std::to_string(it.inline_data.size()) +
                       " bytes but ram_bytes is " + std::to_string(it.ram_bytes));
    return it;
  }
  if (d.size() < sizeof(btrfs_file_extent_item))
    return too_short("EXTENT_DATA", d.size(), sizeof(btrfs_file_extent_item));
  it.disk_bytenr = le64_at(d, offsetof(btrfs_file_extent_item, disk_bytenr));
  it.disk_num_bytes = le64_at(d, offsetof(btrfs_file_extent_item, disk_num_bytes));
  it.offset = le64_at(d, offsetof(btrfs_file_extent_item, offset));
  it.num_bytes = le64_at(d, offsetof(btrfs_file_extent_item, num_bytes));
  return it;
}

Result<RootItem> decode_root_item(std::span<const uint8_t> d) {
  // Items written before kernel 3.5 end where generation_v2 starts.
  constexpr size_t legacy = offsetof(btrfs_root_item, generation_v2);
  if (d.size() < legacy) return too_short("ROOT_ITEM", d.size(), legacy);
  RootItem it;
  it.generation = le64_at(d, offsetof(btrfs_root_item, generation));
  it.root_dirid = le64_at(d, offsetof(btrfs_root_item, root_dirid));
  it.bytenr = le64_at(d, offsetof(btrfs_root_item, bytenr));
  it.flags = le64_at(d, offsetof(btrfs_root_item, flags));
  it.refs = le32_at(d, offsetof(btrfs_root_item, refs));
  if (d.size() < sizeof(btrfs_root_item)) return it;
  // An old kernel that rewrote the item left generation_v2 stale: the v2 fields are then
  // out of date, and the kernel itself ignores them (btrfs_read_root_item).
  if (le64_at(d, offsetof(btrfs_root_item, generation_v2)) != it.generation) return it;
  it.has_v2_fields = true;
  std::memcpy(it.uuid, d.data() + offsetof(btrfs_root_item, uuid), sizeof it.uuid);
  std::memcpy(it.parent_uuid, d.data() + offsetof(btrfs_root_item, parent_uuid),
              sizeof it.parent_uuid);
  std::memcpy(it.received_uuid, d.data() + offsetof(btrfs_root_item, received_uuid),
              sizeof it.received_uuid);
  it.ctransid = le64_at(d, offsetof(btrfs_root_item, ctransid));
  it.otransid = le64_at(d, offsetof(btrfs_root_item, otransid));
  it.stransid = le64_at(d, offsetof(btrfs_root_item, stransid));
  it.rtransid = le64_at(d, offsetof(btrfs_root_item, rtransid));
  return it;
}

Result<ExtentItem> decode_extent_item(uint8_t key_type, std::span<const uint8_t> d) {
  if (key_type != BTRFS_EXTENT_ITEM_KEY && key_type != BTRFS_METADATA_ITEM_KEY)
    return Error{EINVAL, "decode_extent_item: key type " + std::to_string(key_type) +
                             " is neither EXTENT_ITEM nor METADATA_ITEM"};
  const char* name = key_type == BTRFS_EXTENT_ITEM_KEY ? "EXTENT_ITEM" : "METADATA_ITEM";
  if (d.size() < sizeof(btrfs_extent_item))
    return too_short(name, d.size(), sizeof(btrfs_extent_item));
  ExtentItem it;
  it.refs = le64_at(d, offsetof(btrfs_extent_item, refs));
  it.generation = le64_at(d, offsetof(btrfs_extent_item, generation));
  it.flags = le64_at(d, offsetof(btrfs_extent_item, flags));
  size_t pos = sizeof(btrfs_extent_item);
  // Non-skinny tree blocks carry the first key and level before the backrefs.
  if (key_type == BTRFS_EXTENT_ITEM_KEY && (it.flags & kExtentFlagTreeBlock)) {
    pos += sizeof(btrfs_tree_block_info);
    if (d.size() < pos) return too_short(std::string(name) + " tree_block_info", d.size(), pos);
  }
  while (pos < d.size()) {
    const auto rest = d.subspan(pos);
    const uint8_t type = u8_at(rest, 0);
    const size_t size = inline_ref_size(type);
    if (size == 0)
      return malformed(std::string(name) + " has unknown inline backref type " +
                       std::to_string(type) + " at byte " + std::to_string(pos));
    if (rest.size() < size)
      return too_short(
          std::string(name) + " inline backref " + std::to_string(it.inline_refs.size()),
          rest.size(), size);
    it.inline_refs.push_back(decode_inline_ref(rest.first(size)));
    pos += size;
  }
  return it;
}

Result<CsumItem> decode_csum_item(uint64_t key_offset, std::span<const uint8_t> d,
                                  uint16_t csum_size) {
  if (csum_size == 0) return Error{EINVAL, "EXTENT_CSUM decode with checksum size 0"};
  if (d.size() < csum_size) return too_short("EXTENT_CSUM", d.size(), csum_size);
  if (d.size() % csum_size != 0)
    return malformed("EXTENT_CSUM item of " + std::to_string(d.size()) +
                     " bytes is not a multiple of the checksum size " + std::to_string(csum_size));
  CsumItem it;
  it.disk_start = key_offset;
  it.sums = d;
  it.csum_size = csum_size;
  return it;
}

std::optional<uint64_t> item_generation(uint8_t type, std::span<const uint8_t> d) {
  size_t off = 0;
  switch (type) {
    case BTRFS_INODE_ITEM_KEY: off = offsetof(btrfs_inode_item, transid); break;
    case BTRFS_EXTENT_DATA_KEY: off = offsetof(btrfs_file_extent_item, generation); break;
    case BTRFS_ROOT_ITEM_KEY: off = offsetof(btrfs_root_item, generation); break;
    case BTRFS_EXTENT_ITEM_KEY:
    case BTRFS_METADATA_ITEM_KEY: off = offsetof(btrfs_extent_item, generation); break;
    default: return std::nullopt;
  }
  if (d.size() < off + sizeof(uint64_t)) return std::nullopt;
  return le64_at(d, off);
}

}  // namespace btrfs
