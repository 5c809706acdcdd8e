// Writing the --json document's group listings in their placeholders' stead; the contract:
// src/report/json_group_stream.h.
#include "src/report/json_group_stream.h"

#include <nlohmann/json.hpp>

#include "src/report/json_group_text.h"

namespace btrdedupe {
namespace {

std::string dumped_placeholder(size_t i) {
  return "\"groups\": " + nlohmann::ordered_json(groups_placeholder(i)).dump();
}

// The "groups" array as dump(2) would print it at this indent, one group at a time. A read
// error ends it early.
void write_groups(const FilesystemReport& r, const std::string& indent,
                  const std::function<void(std::string_view)>& out) {
  bool first = true;
  const std::string inner = indent + "  ";
  std::string text;
  (void)r.groups.for_each([&](const GroupListing& g) {
    text = first ? "[\n" : ",\n";
    text += inner;
    append_group_json(text, g, inner);
    out(text);
    first = false;
  });
  out(first ? "[]" : "\n" + indent + "]");
}

}  // namespace

std::string groups_placeholder(size_t i) { return "\x01groups of filesystem " + std::to_string(i); }

void write_with_groups(const std::string& dumped, const JobReport& report,
                       const std::function<void(std::string_view)>& out) {
  size_t from = 0;
  for (size_t i = 0; i < report.filesystems.size(); ++i) {
    const std::string placeholder = dumped_placeholder(i);
    const size_t at = dumped.find(placeholder, from);
    const size_t line = dumped.rfind('\n', at) + 1;
    const std::string indent = dumped.substr(line, dumped.find_first_not_of(' ', line) - line);
    out(std::string_view(dumped).substr(from, at - from));
    out("\"groups\": ");
    write_groups(report.filesystems[i], indent, out);
    from = at + placeholder.size();
  }
  out(std::string_view(dumped).substr(from));
}

}  // namespace btrdedupe
