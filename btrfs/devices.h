// The block devices a filesystem lives on (BTRFS_IOC_DEV_INFO, CAP_SYS_ADMIN).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "btrfs/result.h"

namespace btrfs {

struct DeviceInfo {
  uint64_t devid = 0;
  std::string path;       // as the kernel knows it, e.g. /dev/loop0 (may be stale or missing)
  uint64_t total_bytes = 0;
  uint64_t bytes_used = 0;
};

// Every device of the filesystem `fd` is on, by devid.
Result<std::vector<DeviceInfo>> devices(int fd);

}  // namespace btrfs
