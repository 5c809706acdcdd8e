// JobReport's verdicts: the exit code and the net figures printed in the summary.
#include "src/report/job_report.h"

#include <cerrno>
#include <cstring>

#include "src/report/exit_codes.h"

namespace btrdedupe {

namespace {
// Refusals that say what the file is (nodatacow pair, immutable, swapfile, busy with a send),
// not that something broke: the range is skipped and the run goes on (exit code 3).
bool refused_for_what_the_file_is(int code) {
  return code == EINVAL || code == EPERM || code == ETXTBSY || code == EAGAIN || code == EROFS ||
         code == EXDEV;
}
}  // namespace

int JobReport::exit_code() const {
  if (!path_errors.empty()) return kExitError;
  bool skipped = false;
  for (const auto& fs : filesystems) {
    if (!fs.error.empty() || fs.fingerprints.read_errors) return kExitError;
    for (const auto& [code, ranges] : fs.dedupe.errors_by_code)
      if (ranges && !refused_for_what_the_file_is(code)) return kExitError;
    if (fs.dedupe.ranges_failed || fs.dedupe.ranges_changed || fs.dedupe.ranges_differ)
      skipped = true;
  }
  return skipped ? kExitSkipped : kExitOk;
}

int64_t JobReport::duperemove_net_change() const {
  int64_t net = 0;
  for (const auto& fs : filesystems)
    net += static_cast<int64_t>(fs.after.in_shared_extents) -
           static_cast<int64_t>(fs.before.in_shared_extents);
  return net;
}

int64_t JobReport::net_shared_change() const {
  int64_t net = 0;
  for (const auto& fs : filesystems)
    net += static_cast<int64_t>(fs.after.shared_bytes) - static_cast<int64_t>(fs.before.shared_bytes);
  return net;
}

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return std::string("SIG") + (abbrev ? abbrev : "?");
}

}  // namespace btrdedupe
