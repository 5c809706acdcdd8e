// The words a text report gives its scan and freed figures, which depend on the reader
// that made them (src/read/root_reader.h): chosen once per report.
#pragma once

namespace btrdedupe {

// The words each reader's figures deserve, chosen once from JobReport::reader.
struct ReaderWords {
  bool tree_counts;       // the scan line names tree items and searches
  const char* freed_as;   // what a freed extent is, and whose count it agrees with
  const char* confirmed;  // how the figure was confirmed
  const char* on_disk;    // what the scan's "on disk" figure is
};
inline constexpr ReaderWords kTreeWords{
    true, "whole extents, as btrfs filesystem df counts them", "from the trees",
    "allocated on disk"};
inline constexpr ReaderWords kPathWords{
    false,
    "extents no file maps any more and FIEMAP said no other file held, as df and btrfs "
    "filesystem df count them",
    "by walking the files again",
    // FIEMAP tells the bytes a file maps, not a whole extent's size nor a compressed one's.
    "mapped on disk (FIEMAP: referenced bytes, compressed ones at their logical size)"};

}  // namespace btrdedupe
