#include "src/json_group_text.h"

#include <nlohmann/json.hpp>

#include "src/printable_path.h"

namespace btrdedupe {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kHexDigits[] = "0123456789abcdef";

// A string as dump() writes it: escaped, and bytes that are not UTF-8 (`utf8` false)
// replaced, by dump() itself in that rare case.
void append_string(std::string& text, const std::string& value, bool utf8) {
  if (!utf8) {
    text += Json(value).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  text += '"';
  for (const char c : value) {
    switch (c) {
      case '"': text += "\\\""; break;
      case '\\': text += "\\\\"; break;
      case '\b': text += "\\b"; break;
      case '\f': text += "\\f"; break;
      case '\n': text += "\\n"; break;
      case '\r': text += "\\r"; break;
      case '\t': text += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          text += "\\u00";
          text += kHexDigits[(c >> 4) & 15];
          text += kHexDigits[c & 15];
        } else {
          text += c;
        }
    }
  }
  text += '"';
}

}  // namespace

void append_group_json(std::string& text, const GroupListing& g, const std::string& indent) {
  const std::string in1 = indent + "  ", in2 = in1 + "  ", in3 = in2 + "  ";
  text += "{\n" + in1 + "\"length\": " + std::to_string(g.length) + ",\n";
  text += in1 + "\"whole_file\": " + (g.whole_file ? "true" : "false") + ",\n";
  text += in1 + "\"members\": ";
  if (g.members.empty()) {
    text += "[]";
  } else {
    text += "[\n";
    for (size_t i = 0; i < g.members.size(); ++i) {
      const auto& m = g.members[i];
      text += in2 + "{\n" + in3 + "\"path\": ";
      const bool utf8 = is_valid_utf8(m.path);
      append_string(text, m.path, utf8);
      if (!utf8) text += ",\n" + in3 + "\"path_hex\": \"" + hex_bytes(m.path) + "\"";
      text += ",\n" + in3 + "\"offset\": " + std::to_string(m.offset);
      text += ",\n" + in3 + "\"layout\": " + std::to_string(m.layout);
      text += ",\n" + in3 + "\"role\": \"";
      text += m.source ? "source" : m.destination ? "destination" : "unchanged";
      text += "\"\n" + in2 + (i + 1 < g.members.size() ? "},\n" : "}\n");
    }
    text += in1 + "]";
  }
  text += "\n" + indent + "}";
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
