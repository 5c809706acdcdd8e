#include "btrfs/result.h"

#include <cstring>

namespace btrfs {

std::string Error::message() const {
  if (code == 0) return context;
  return context + ": " + std::strerror(code);
}

Error errno_error(std::string context) {
  return Error{errno, std::move(context)};
}

}  // namespace btrfs
