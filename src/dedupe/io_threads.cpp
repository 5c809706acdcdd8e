#include "src/dedupe/io_threads.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>

#include "btrfs/devices.h"
#include "btrfs/fd.h"

namespace btrdedupe {

bool device_is_rotational(const std::string& device) {
  struct stat st {};
  if (::stat(device.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return false;
  const std::string base = "/sys/dev/block/" + std::to_string(major(st.st_rdev)) + ":" +
                           std::to_string(minor(st.st_rdev));
  // A partition has no queue of its own: its disk's is one directory up.
  for (const char* queue : {"/queue/rotational", "/../queue/rotational"}) {
    std::ifstream in(base + queue);
    int rotational = 0;
    if (in >> rotational) return rotational != 0;
  }
  return false;
}

unsigned default_io_threads(const std::string& path) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_NONBLOCK);
  if (!fd) return 2;
  auto devs = btrfs::devices(fd->get());
  if (!devs || devs->empty()) return 2;
  for (const auto& d : *devs)
    if (device_is_rotational(d.path)) return 2;
  return 4;
}

}  // namespace btrdedupe
