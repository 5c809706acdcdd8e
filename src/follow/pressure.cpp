#include "src/follow/pressure.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "btrfs/fd.h"

namespace btrdedupe {
namespace {

std::optional<uint64_t> read_some_total(const char* path) {
  auto fd = btrfs::Fd::open(path, O_RDONLY);
  if (!fd) return std::nullopt;
  char buf[512];
  const ssize_t n = ::read(fd->get(), buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return psi_some_total(std::string_view(buf, static_cast<size_t>(n)));
}

class ProcPressure final : public PressureSource {
 public:
  std::optional<StallTotals> read() override {
    auto io = read_some_total("/proc/pressure/io");
    auto cpu = read_some_total("/proc/pressure/cpu");
    if (!io || !cpu) return std::nullopt;
    return StallTotals{*io, *cpu};
  }
};

}  // namespace

std::optional<uint64_t> psi_some_total(std::string_view text) {
  if (!text.starts_with("some ")) return std::nullopt;
  const auto line = text.substr(0, text.find('\n'));
  const auto at = line.find(" total=");
  if (at == std::string_view::npos) return std::nullopt;
  const auto digits = line.substr(at + 7);
  uint64_t total = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), total);
  if (error != std::errc() || end == digits.data()) return std::nullopt;
  return total;
}

PressureSource& proc_pressure() {
  static ProcPressure source;
  return source;
}

double stall_share(const StallTotals& before, const StallTotals& after, double seconds) {
  if (seconds <= 0) return 0;
  const auto delta = [](uint64_t a, uint64_t b) { return b > a ? double(b - a) : 0.0; };
  const double stalled = std::max(delta(before.io_us, after.io_us), delta(before.cpu_us, after.cpu_us));
  return std::min(1.0, stalled / (seconds * 1e6));
}

}  // namespace btrdedupe
