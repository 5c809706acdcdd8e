// Which of the two readers a run takes (src/read/root_reader.h).
#pragma once

namespace btrdedupe {

enum class ReaderKind { Tree, Paths };
const char* reader_name(ReaderKind kind);  // "tree", "paths"

}  // namespace btrdedupe
