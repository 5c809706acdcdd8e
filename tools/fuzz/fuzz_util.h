// Helpers for the libFuzzer targets: touch every byte a decoder hands back, so a span that
// points outside the input is caught by AddressSanitizer, not just stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace fuzz {

inline volatile uint8_t sink = 0;

inline void touch(std::span<const uint8_t> bytes) {
  uint8_t x = 0;
  for (uint8_t b : bytes) x ^= b;
  sink = sink ^ x;
}

inline void touch(const std::string& s) {
  touch({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

}  // namespace fuzz
