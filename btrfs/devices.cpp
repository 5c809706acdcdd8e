#include "btrfs/devices.h"

#include <linux/btrfs.h>
#include <sys/ioctl.h>

#include <cstring>

namespace btrfs {

Result<std::vector<DeviceInfo>> devices(int fd) {
  btrfs_ioctl_fs_info_args fs{};
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &fs) != 0) return errno_error("BTRFS_IOC_FS_INFO");
  std::vector<DeviceInfo> out;
  // devids may have gaps (removed devices): walk up to max_id.
  for (uint64_t id = 1; id <= fs.max_id; ++id) {
    btrfs_ioctl_dev_info_args dev{};
    dev.devid = id;
    if (::ioctl(fd, BTRFS_IOC_DEV_INFO, &dev) != 0) {
      if (errno == ENODEV) continue;
      return errno_error("BTRFS_IOC_DEV_INFO for device " + std::to_string(id));
    }
    DeviceInfo d;
    d.devid = dev.devid;
    d.path.assign(reinterpret_cast<const char*>(dev.path),
                  strnlen(reinterpret_cast<const char*>(dev.path), sizeof dev.path));
    d.total_bytes = dev.total_bytes;
    d.bytes_used = dev.bytes_used;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace btrfs
