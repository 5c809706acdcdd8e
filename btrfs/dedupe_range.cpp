#include "btrfs/dedupe_range.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace btrfs {
namespace {

// The file behind an fd, for error messages only ("fd N" when /proc cannot say).
std::string fd_name(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::string target(4096, '\0');
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size());
  if (n <= 0) return "fd " + std::to_string(fd);
  target.resize(static_cast<size_t>(n));
  return target;
}

// struct file_dedupe_range with its trailing info[] array, in 8-byte aligned storage.
class DedupeArgs {
 public:
  DedupeArgs(uint64_t src_offset, uint64_t length,
             std::span<const DedupeDestination> destinations)
      : storage_((sizeof(file_dedupe_range) +
                  destinations.size() * sizeof(file_dedupe_range_info) + 7) / 8) {
    auto* args = get();
    args->src_offset = src_offset;
    args->src_length = length;
    args->dest_count = static_cast<uint16_t>(destinations.size());
    for (size_t i = 0; i < destinations.size(); ++i) {
      args->info[i].dest_fd = destinations[i].fd;
      args->info[i].dest_offset = destinations[i].offset;
    }
  }
  file_dedupe_range* get() { return reinterpret_cast<file_dedupe_range*>(storage_.data()); }

 private:
  std::vector<uint64_t> storage_;
};

// What a SAME outcome really shared. The kernel keeps an unaligned length only when the
// range ends at EOF of both files, otherwise rounds it down to a block, yet reports the
// whole length in bytes_deduped (measured on 6.18).
struct TailRule {
  uint64_t src_end = 0;   // src_offset + issued length
  uint64_t src_size = 0;
  uint64_t block = 4096;

  uint64_t shared(uint64_t length, const DedupeDestination& dst) const {
    if (length % block == 0) return length;
    struct stat st {};
    const bool dst_at_eof = ::fstat(dst.fd, &st) == 0 &&
                            static_cast<uint64_t>(st.st_size) == dst.offset + length;
    if (src_end == src_size && dst_at_eof) return length;
    return length - length % block;
  }
};

DedupeOutcome outcome_of(const file_dedupe_range_info& info, const DedupeDestination& dst,
                         const TailRule& tail) {
  DedupeOutcome out;
  if (info.status == FILE_DEDUPE_RANGE_SAME) {
    out.status = DedupeStatus::Same;
    const uint64_t reported = info.bytes_deduped;
    out.bytes_deduped = std::min(reported, tail.shared(reported, dst));
  } else if (info.status == FILE_DEDUPE_RANGE_DIFFERS) {
    out.status = DedupeStatus::Differs;
  } else {
    out.status = DedupeStatus::Error;
    out.error = -static_cast<int>(info.status);
  }
  return out;
}

std::string describe_call(int src_fd, uint64_t src_offset, uint64_t length, size_t count) {
  return "FIDEDUPERANGE of " + std::to_string(length) + " bytes at offset " +
         std::to_string(src_offset) + " of " + fd_name(src_fd) + " against " +
         std::to_string(count) + " destination(s)";
}

}  // namespace

Result<DedupeCall> dedupe_range(int src_fd, uint64_t src_offset, uint64_t length,
                                std::span<const DedupeDestination> destinations) {
  if (destinations.size() > kMaxDedupeDestinations)
    return Error{EINVAL, describe_call(src_fd, src_offset, length, destinations.size()) +
                             ": more than " + std::to_string(kMaxDedupeDestinations) +
                             " destinations do not fit in one call"};
  struct stat st {};
  if (::fstat(src_fd, &st) != 0) return errno_error("fstat of dedupe source " + fd_name(src_fd));

  DedupeCall call;
  call.requested_length = length;
  // The kernel fails the whole call for a source range past EOF: never ask for one.
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t available = size > src_offset ? size - src_offset : 0;
  call.issued_length = std::min({length, available, kMaxDedupeLength});
  call.outcomes.assign(destinations.size(), DedupeOutcome{});
  // A zero length "succeeds" deduping nothing: a caller looping on progress would spin.
  if (call.issued_length == 0 || destinations.empty()) return call;

  DedupeArgs args(src_offset, call.issued_length, destinations);
  int rc = 0;
  do {
    rc = ::ioctl(src_fd, FIDEDUPERANGE, args.get());
  } while (rc != 0 && errno == EINTR);
  if (rc != 0)
    return errno_error(describe_call(src_fd, src_offset, call.issued_length, destinations.size()));
  const TailRule tail{src_offset + call.issued_length, size,
                      st.st_blksize > 0 ? static_cast<uint64_t>(st.st_blksize) : 4096};
  for (size_t i = 0; i < destinations.size(); ++i)
    call.outcomes[i] = outcome_of(args.get()->info[i], destinations[i], tail);
  return call;
}

}  // namespace btrfs
