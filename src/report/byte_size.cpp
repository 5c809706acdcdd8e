#include "src/report/byte_size.h"

#include <cctype>
#include <cstdio>

namespace btrdedupe {

std::string human_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string size_text(uint64_t bytes, bool human) {
  return human ? human_bytes(bytes) : std::to_string(bytes);
}

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  uint64_t value = 0;
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  std::string suffix;
  for (; i < text.size(); ++i) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  int shift = 0;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") shift = 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB") shift = 40;
  else return std::nullopt;
  if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

}  // namespace btrdedupe
