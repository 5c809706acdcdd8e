// Byte counts as people read and type them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace btrdedupe {

// 1536 -> "1.5 KiB"; below 1 KiB -> "512 B".
std::string human_bytes(uint64_t bytes);

// A byte count as a report prints it: human_bytes with -h, else the raw number.
std::string size_text(uint64_t bytes, bool human);

// "128K", "4M", "1G", "4096" (binary multiples, optional trailing B/iB). nullopt on garbage
// or overflow.
std::optional<uint64_t> parse_byte_size(const std::string& text);

}  // namespace btrdedupe
