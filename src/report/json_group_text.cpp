#include "src/report/json_group_text.h"

#include <nlohmann/json.hpp>

#include "src/report/printable_path.h"

namespace btrdedupe {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kHexDigits[] = "0123456789abcdef";

// A string as dump() writes it: escaped, and bytes that are not UTF-8 (`utf8` false)
// replaced, by dump() itself in that rare case. Runs of plain characters are appended
// whole: a listing writes a path per member.
void append_string(std::string& text, const std::string& value, bool utf8) {
  if (!utf8) {
    text += Json(value).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  text += '"';
  size_t plain = 0;  // first character not appended yet
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    const char* escaped = nullptr;
    switch (c) {
      case '"': escaped = "\\\""; break;
      case '\\': escaped = "\\\\"; break;
      case '\b': escaped = "\\b"; break;
      case '\f': escaped = "\\f"; break;
      case '\n': escaped = "\\n"; break;
      case '\r': escaped = "\\r"; break;
      case '\t': escaped = "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) continue;
    }
    text.append(value, plain, i - plain);
    plain = i + 1;
    if (escaped) {
      text += escaped;
    } else {
      text += "\\u00";
      text += kHexDigits[(c >> 4) & 15];
      text += kHexDigits[c & 15];
    }
  }
  text.append(value, plain);
  text += '"';
}

}  // namespace

void append_group_json(std::string& text, const GroupListing& g, const std::string& indent) {
  // Appended piece by piece: no temporary string per line (a listing has a line per field).
  const std::string in1 = indent + "  ", in2 = in1 + "  ", in3 = in2 + "  ";
  text.append("{\n").append(in1).append("\"length\": ").append(std::to_string(g.length));
  text.append(",\n").append(in1).append("\"whole_file\": ");
  text += g.whole_file ? "true" : "false";
  text.append(",\n").append(in1).append("\"members\": ");
  if (g.members.empty()) {
    text += "[]";
  } else {
    text += "[\n";
    for (size_t i = 0; i < g.members.size(); ++i) {
      const auto& m = g.members[i];
      text.append(in2).append("{\n").append(in3).append("\"path\": ");
      const bool utf8 = is_valid_utf8(m.path);
      append_string(text, m.path, utf8);
      if (!utf8)
        text.append(",\n").append(in3).append("\"path_hex\": \"").append(hex_bytes(m.path)) += '"';
      text.append(",\n").append(in3).append("\"offset\": ").append(std::to_string(m.offset));
      text.append(",\n").append(in3).append("\"layout\": ").append(std::to_string(m.layout));
      text.append(",\n").append(in3).append("\"role\": \"");
      text += m.source ? "source" : m.destination ? "destination" : "unchanged";
      text.append("\"\n").append(in2).append(i + 1 < g.members.size() ? "},\n" : "}\n");
    }
    text.append(in1) += ']';
  }
  text.append("\n").append(indent) += '}';
}

std::string hex_bytes(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    out += kHexDigits[c >> 4];
    out += kHexDigits[c & 15];
  }
  return out;
}

}  // namespace btrdedupe
