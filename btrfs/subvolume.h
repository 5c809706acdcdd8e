// Subvolume listing and identity, through libbtrfsutil.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

using Uuid = std::array<uint8_t, 16>;

bool uuid_is_nil(const Uuid& uuid);
std::string uuid_string(const Uuid& uuid);  // "" for the nil uuid

// The top-level subvolume's id (BTRFS_FS_TREE_OBJECTID).
inline constexpr uint64_t kTopLevelSubvolume = 5;

struct Subvolume {
  uint64_t id = 0;
  std::string path;        // relative to the top-level subvolume; "" for the top level
  uint64_t parent_id = 0;  // subvolume containing it (0 for the top level)
  uint64_t dir_id = 0;     // inode of the directory containing it in parent_id
  Uuid uuid{};
  Uuid parent_uuid{};      // set on snapshots: the uuid of the subvolume it was taken from
  Uuid received_uuid{};
  bool readonly = false;
  uint64_t generation = 0; // last transaction that changed the subvolume's tree
  uint64_t ctransid = 0;
  uint64_t otransid = 0;   // transaction that created it

  bool is_snapshot() const { return !uuid_is_nil(parent_uuid); }
};

// Every subvolume of the filesystem that `path` (any path inside it) is on, the top level
// first, then in the order libbtrfsutil yields them. Needs CAP_SYS_ADMIN; without it the
// error says so (code EPERM).
Result<std::vector<Subvolume>> list_subvolumes(const std::string& path);

// Information about one subvolume by id, from any path on the filesystem.
Result<Subvolume> subvolume_info(const std::string& path, uint64_t id);

// Id of the subvolume that the open file `fd` belongs to (unprivileged).
Result<uint64_t> subvolume_id(int fd);
// Whether the subvolume of the open file `fd` is read-only (unprivileged).
Result<bool> subvolume_read_only(int fd);

}  // namespace btrfs
