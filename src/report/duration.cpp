#include "src/report/duration.h"

#include <cctype>
#include <cstdlib>
#include <map>

namespace btrdedupe {
namespace {

std::optional<double> unit_seconds(const std::string& unit) {
  static const std::map<std::string, double> units = {
      {"", 1},        {"s", 1},       {"sec", 1},      {"second", 1},   {"seconds", 1},
      {"m", 60},      {"min", 60},    {"minute", 60},  {"minutes", 60}, {"h", 3600},
      {"hr", 3600},   {"hour", 3600}, {"hours", 3600}, {"d", 86400},    {"day", 86400},
      {"days", 86400}, {"ms", 0.001}};
  const auto it = units.find(unit);
  if (it == units.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<double> parse_duration(const std::string& text) {
  double total = 0;
  bool any = false;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '.') return std::nullopt;
    const char* start = text.c_str() + i;
    char* end = nullptr;
    const double value = std::strtod(start, &end);
    if (end == start) return std::nullopt;
    i += static_cast<size_t>(end - start);
    size_t j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    const auto unit = unit_seconds(text.substr(i, j - i));
    if (!unit) return std::nullopt;
    total += value * *unit;
    any = true;
    i = j;
  }
  if (!any) return std::nullopt;
  return total;
}

}  // namespace btrdedupe
