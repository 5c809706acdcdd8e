#include "btrfs/subvolume.h"

#include <btrfsutil.h>
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace btrfs {
namespace {

// libbtrfsutil reports its own error enum and leaves the system errno in errno.
Error util_error(btrfs_util_error err, const std::string& what) {
  const int code = errno;
  std::string context = what + ": " + btrfs_util_strerror(err);
  if (code == EPERM || code == EACCES)
    context += " (needs root: CAP_SYS_ADMIN is required to search the filesystem's trees)";
  return Error{code, context};
}

Subvolume from_util(const struct btrfs_util_subvolume_info& info, std::string path) {
  Subvolume s;
  s.id = info.id;
  s.path = std::move(path);
  s.parent_id = info.parent_id;
  s.dir_id = info.dir_id;
  std::copy(std::begin(info.uuid), std::end(info.uuid), s.uuid.begin());
  std::copy(std::begin(info.parent_uuid), std::end(info.parent_uuid), s.parent_uuid.begin());
  std::copy(std::begin(info.received_uuid), std::end(info.received_uuid), s.received_uuid.begin());
  s.readonly = info.flags & BTRFS_ROOT_SUBVOL_RDONLY;
  s.generation = info.generation;
  s.ctransid = info.ctransid;
  s.otransid = info.otransid;
  return s;
}

struct IteratorCloser {
  void operator()(btrfs_util_subvolume_iterator* it) const {
    btrfs_util_destroy_subvolume_iterator(it);
  }
};

}  // namespace

bool uuid_is_nil(const Uuid& uuid) {
  return std::all_of(uuid.begin(), uuid.end(), [](uint8_t b) { return b == 0; });
}

std::string uuid_string(const Uuid& u) {
  if (uuid_is_nil(u)) return "";
  char buf[37];
  std::snprintf(buf, sizeof buf,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return buf;
}

Result<Subvolume> subvolume_info(const std::string& path, uint64_t id) {
  struct btrfs_util_subvolume_info info{};
  const auto err = btrfs_util_subvolume_info(path.c_str(), id, &info);
  if (err != BTRFS_UTIL_OK)
    return util_error(err, "subvolume " + std::to_string(id) + " info via " + path);
  return from_util(info, "");
}

Result<std::vector<Subvolume>> list_subvolumes(const std::string& path) {
  std::vector<Subvolume> result;
  auto top = subvolume_info(path, kTopLevelSubvolume);
  if (!top) return top.error();
  result.push_back(std::move(*top));

  btrfs_util_subvolume_iterator* raw = nullptr;
  auto err = btrfs_util_create_subvolume_iterator(path.c_str(), kTopLevelSubvolume, 0, &raw);
  if (err != BTRFS_UTIL_OK) return util_error(err, "listing subvolumes via " + path);
  std::unique_ptr<btrfs_util_subvolume_iterator, IteratorCloser> it(raw);
  for (;;) {
    char* sub_path = nullptr;
    struct btrfs_util_subvolume_info info{};
    err = btrfs_util_subvolume_iterator_next_info(it.get(), &sub_path, &info);
    if (err == BTRFS_UTIL_ERROR_STOP_ITERATION) break;
    if (err != BTRFS_UTIL_OK) return util_error(err, "listing subvolumes via " + path);
    std::unique_ptr<char, decltype(&std::free)> owned(sub_path, &std::free);
    result.push_back(from_util(info, sub_path));
  }
  return result;
}

Result<uint64_t> subvolume_id(int fd) {
  uint64_t id = 0;
  const auto err = btrfs_util_subvolume_id_fd(fd, &id);
  if (err != BTRFS_UTIL_OK) return util_error(err, "subvolume id");
  return id;
}

Result<bool> subvolume_read_only(int fd) {
  bool read_only = false;
  const auto err = btrfs_util_get_subvolume_read_only_fd(fd, &read_only);
  if (err != BTRFS_UTIL_OK) return util_error(err, "subvolume flags");
  return read_only;
}

}  // namespace btrfs
