// A listed duplicate group as --json prints it (docs/json-report.md, "groups"), written
// straight as text: the bytes nlohmann's dump(2) gives, without a Json object per group and
// member. A listing has a few members per group and millions of groups, and building each
// as a Json object took a fifth of a windowed report run's CPU (1 of 5.5 s on 4 copies of
// linux-source). JsonReport.GroupsAreWrittenOneAtATimeInTheDocumentsOwnLayout holds the
// text to what dump(2) prints.
#pragma once

#include <string>

#include "src/report/group_listing.h"

namespace btrdedupe {

// The bytes as lowercase hex: "path_hex", beside a path that is not valid UTF-8.
std::string hex_bytes(const std::string& bytes);

// Appends `g` as dump(2) prints the object {"length", "whole_file", "members": [{"path",
// ["path_hex",] "offset", "layout", "role"}]} nested at `indent`: its first line as it
// starts, the lines after it indented.
void append_group_json(std::string& text, const GroupListing& g, const std::string& indent);

}  // namespace btrdedupe
