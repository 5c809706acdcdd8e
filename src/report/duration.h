// Durations as people and systemd units write them: "90" (seconds), "5s", "30m", "1h30m",
// "2h", "1d", also "min", "sec", "hr"-style words systemd accepts ("5min", "1h 30min").
#pragma once

#include <optional>
#include <string>

namespace btrdedupe {

// Seconds, or nullopt when `text` is not a duration (empty, a bad unit, a negative number).
std::optional<double> parse_duration(const std::string& text);

}  // namespace btrdedupe
