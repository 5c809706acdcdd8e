// The words a text report gives its scan and freed figures, which depend on the reader
// that made them (src/read/root_reader.h): chosen once per report.
#pragma once

namespace btrdedupe {

// The words each reader's figures deserve, chosen once from JobReport::reader.
struct ReaderWords {
  bool tree_counts;       // the scan line names tree items and searches
  const char* freed_as;   // what a freed extent is, and whose count it agrees with
  const char* confirmed;  // how the figure was confirmed
};
inline constexpr ReaderWords kTreeWords{
    true, "whole extents, as btrfs filesystem df counts them", "from the trees"};
inline constexpr ReaderWords kPathWords{
    false,
    "extents no file maps any more and FIEMAP said no other file held, as df and btrfs "
    "filesystem df count them",
    "by walking the files again"};

}  // namespace btrdedupe
