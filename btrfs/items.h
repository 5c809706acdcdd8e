// Decoders of on-disk btrfs items, as returned by tree search, and their encoders (for
// in-memory trees in tests: btrfs/tree_source.h).
//
// Every decoder takes untrusted bytes: it checks lengths and never reads out of bounds;
// a short or malformed item gives an Error (code EUCLEAN) saying which item and why.
// All integers on disk are little-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

// Inode flags (fs/btrfs/btrfs_inode.h and libbtrfs's ctree.h; not in the UAPI headers).
inline constexpr uint64_t kInodeNoDataSum = 1ULL << 0;   // BTRFS_INODE_NODATASUM
inline constexpr uint64_t kInodeNoDataCow = 1ULL << 1;   // BTRFS_INODE_NODATACOW
inline constexpr uint64_t kInodeReadonly = 1ULL << 2;    // BTRFS_INODE_READONLY
inline constexpr uint64_t kInodeNoCompress = 1ULL << 3;  // BTRFS_INODE_NOCOMPRESS
inline constexpr uint64_t kInodeImmutable = 1ULL << 5;   // BTRFS_INODE_IMMUTABLE
inline constexpr uint64_t kInodeAppend = 1ULL << 6;      // BTRFS_INODE_APPEND

struct Timespec {
  int64_t sec = 0;
  uint32_t nsec = 0;
};

struct InodeItem {
  uint64_t generation = 0;  // transaction that created the inode
  uint64_t transid = 0;     // last transaction that changed it
  uint64_t size = 0;
  uint64_t nbytes = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0, gid = 0, mode = 0;
  uint64_t flags = 0;
  uint64_t sequence = 0;
  Timespec atime, ctime, mtime, otime;

  bool nodatasum() const { return flags & kInodeNoDataSum; }
  bool nodatacow() const { return flags & kInodeNoDataCow; }
  bool is_regular() const { return (mode & 0170000) == 0100000; }
  bool is_directory() const { return (mode & 0170000) == 0040000; }
};
Result<InodeItem> decode_inode_item(std::span<const uint8_t> data);

// One name of an inode: INODE_REF (key offset = parent dir) holds several; INODE_EXTREF
// holds the parent in each entry.
struct InodeName {
  uint64_t parent = 0;  // directory inode
  uint64_t index = 0;   // index in the directory
  std::string name;     // raw bytes, not necessarily UTF-8
};
Result<std::vector<InodeName>> decode_inode_refs(uint64_t parent, std::span<const uint8_t> data);
Result<std::vector<InodeName>> decode_inode_extrefs(std::span<const uint8_t> data);

// What a DIR_INDEX item (key: directory inode, DIR_INDEX, index) points at: the child's
// location key. type is BTRFS_INODE_ITEM_KEY for an inode, BTRFS_ROOT_ITEM_KEY for a
// subvolume.
struct DirEntryTarget {
  uint64_t objectid = 0;
  uint8_t type = 0;
};
Result<DirEntryTarget> decode_dir_index(std::span<const uint8_t> data);

enum class Compression : uint8_t { None = 0, Zlib = 1, Lzo = 2, Zstd = 3 };
const char* compression_name(Compression c);

enum class FileExtentType : uint8_t { Inline = 0, Regular = 1, Prealloc = 2 };

struct FileExtentItem {
  uint64_t generation = 0;
  uint64_t ram_bytes = 0;   // uncompressed size of the whole on-disk extent (or inline data)
  Compression compression = Compression::None;
  uint8_t encryption = 0;
  uint16_t other_encoding = 0;
  FileExtentType type = FileExtentType::Regular;
  // Regular and prealloc only:
  uint64_t disk_bytenr = 0;     // 0: a hole
  uint64_t disk_num_bytes = 0;  // on-disk (possibly compressed) size of the extent
  uint64_t offset = 0;          // where this file range starts inside the decompressed extent
  uint64_t num_bytes = 0;       // logical length this item covers in the file
  // Inline only: the stored bytes (compressed when compression != None).
  std::span<const uint8_t> inline_data;

  bool is_inline() const { return type == FileExtentType::Inline; }
  bool is_prealloc() const { return type == FileExtentType::Prealloc; }
  bool is_hole() const { return type == FileExtentType::Regular && disk_bytenr == 0; }
  // Logical length in the file: num_bytes, or ram_bytes for inline extents.
  uint64_t length() const { return is_inline() ? ram_bytes : num_bytes; }
};
// Unknown type or compression values, and an uncompressed inline item whose ram_bytes
// differs from its data size, are errors (the kernel's tree checker refuses them too).
Result<FileExtentItem> decode_file_extent_item(std::span<const uint8_t> data);

inline constexpr uint64_t kRootSubvolReadonly = 1ULL << 0;  // BTRFS_ROOT_SUBVOL_RDONLY

struct RootItem {
  uint64_t generation = 0;
  uint64_t root_dirid = 0;
  uint64_t bytenr = 0;
  uint64_t flags = 0;
  uint32_t refs = 0;
  // Present only in items written by kernels >= 3.5 (generation_v2 == generation).
  bool has_v2_fields = false;
  uint8_t uuid[16]{}, parent_uuid[16]{}, received_uuid[16]{};
  uint64_t ctransid = 0, otransid = 0, stransid = 0, rtransid = 0;

  bool readonly() const { return flags & kRootSubvolReadonly; }
};
Result<RootItem> decode_root_item(std::span<const uint8_t> data);

// One inline backref of an EXTENT_ITEM / METADATA_ITEM.
struct ExtentBackref {
  uint8_t type = 0;        // BTRFS_EXTENT_DATA_REF_KEY, BTRFS_SHARED_DATA_REF_KEY, ...
  uint64_t root = 0;       // EXTENT_DATA_REF / TREE_BLOCK_REF / EXTENT_OWNER_REF
  uint64_t objectid = 0;   // EXTENT_DATA_REF: inode
  uint64_t offset = 0;     // EXTENT_DATA_REF: file offset key; SHARED_*: parent bytenr
  uint32_t count = 0;      // EXTENT_DATA_REF / SHARED_DATA_REF
};

inline constexpr uint64_t kExtentFlagData = 1ULL << 0;       // BTRFS_EXTENT_FLAG_DATA
inline constexpr uint64_t kExtentFlagTreeBlock = 1ULL << 1;  // BTRFS_EXTENT_FLAG_TREE_BLOCK

struct ExtentItem {
  uint64_t refs = 0;
  uint64_t generation = 0;
  uint64_t flags = 0;
  std::vector<ExtentBackref> inline_refs;
  bool is_data() const { return flags & kExtentFlagData; }
};
// key_type: BTRFS_EXTENT_ITEM_KEY or BTRFS_METADATA_ITEM_KEY (which has no tree_block_info);
// any other is EINVAL. An unknown inline backref type is an error: its size is unknown.
Result<ExtentItem> decode_extent_item(uint8_t key_type, std::span<const uint8_t> data);

// EXTENT_CSUM item: key offset = disk bytenr of the first sector; payload = packed sums.
struct CsumItem {
  uint64_t disk_start = 0;
  std::span<const uint8_t> sums;  // sectors() * csum_size bytes
  uint16_t csum_size = 0;
  uint64_t sectors() const { return csum_size ? sums.size() / csum_size : 0; }
};
// An empty item, or one that is not a whole number of sums, is an error; csum_size 0 is EINVAL.
Result<CsumItem> decode_csum_item(uint64_t key_offset, std::span<const uint8_t> data,
                                  uint16_t csum_size);

// The item's own generation where its type has one (INODE_ITEM transid, EXTENT_DATA
// generation, ROOT_ITEM generation, EXTENT_ITEM generation); nullopt otherwise or when
// the bytes are too short to tell.
std::optional<uint64_t> item_generation(uint8_t type, std::span<const uint8_t> data);

// Encoders: the on-disk bytes each decoder above reads back as the same value (fields the
// structs do not hold are zero). For building synthetic trees; not used on a filesystem.
std::vector<uint8_t> encode_inode_item(const InodeItem& item);
// INODE_REF entries of one parent (the key offset holds it: InodeName::parent is not stored).
std::vector<uint8_t> encode_inode_refs(std::span<const InodeName> names);
std::vector<uint8_t> encode_inode_extrefs(std::span<const InodeName> names);
// file_type: BTRFS_FT_* of the child (not decoded).
std::vector<uint8_t> encode_dir_index(const DirEntryTarget& target, std::string_view name,
                                      uint8_t file_type);
// Inline: the header and inline_data; regular and prealloc: the whole item.
std::vector<uint8_t> encode_file_extent_item(const FileExtentItem& item);
// With has_v2_fields the whole item (generation_v2 = generation), else the legacy prefix.
std::vector<uint8_t> encode_root_item(const RootItem& item);

}  // namespace btrfs
