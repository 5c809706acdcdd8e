// How much the machine's tasks stall: Linux pressure stall information (PSI,
// /proc/pressure/io and cpu). A follower yields while others stall (src/follow/yielding_pace.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace btrdedupe {

// Microseconds during which at least one task stalled, since boot ("some ... total=").
struct StallTotals {
  uint64_t io_us = 0, cpu_us = 0;
};

// The "some" line's total of a PSI file's text; nullopt when there is none.
std::optional<uint64_t> psi_some_total(std::string_view text);

// Contract: read() is cheap (two small files); nullopt where the kernel has no PSI
// (CONFIG_PSI off, or psi=0): the follower then never pauses for pressure.
class PressureSource {
 public:
  virtual ~PressureSource() = default;
  virtual std::optional<StallTotals> read() = 0;
};

// /proc/pressure/io and /proc/pressure/cpu: the whole machine's.
PressureSource& proc_pressure();

// The share of `seconds` during which some task stalled, the larger of I/O and CPU, from
// two readings that far apart.
double stall_share(const StallTotals& before, const StallTotals& after, double seconds);

}  // namespace btrdedupe
