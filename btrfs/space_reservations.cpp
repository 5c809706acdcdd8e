#include "btrfs/space_reservations.h"

#include <fstream>

namespace btrfs {
namespace {

Result<uint64_t> read_counter(const std::string& path) {
  std::ifstream in(path);
  uint64_t value = 0;
  if (!(in >> value)) return errno_error(path);
  return value;
}

}  // namespace

Result<uint64_t> reserved_for_writes(const std::string& fsid) {
  const std::string base = "/sys/fs/btrfs/" + fsid + "/allocation/";
  auto data = read_counter(base + "data/bytes_may_use");
  if (!data) return data.error();
  auto metadata = read_counter(base + "metadata/bytes_may_use");
  if (!metadata) return metadata.error();
  return *data + *metadata;
}

}  // namespace btrfs
