// What a user can ask of a hashfile without running a dedupe: -L, --stats, --history, -R.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "src/read/root_reader.h"

namespace btrdedupe {

// -L: what the catalog holds (filesystem, roots, subvolumes with their scan generations,
// file and block rows, runs). Returns an exit code.
int list_catalog(const std::string& hashfile, bool human, std::FILE* out, std::FILE* err);

// --stats: what it holds and how much of it is duplicated (by whole-file hash).
int catalog_stats(const std::string& hashfile, bool human, std::FILE* out, std::FILE* err);

// --history: the runs recorded, oldest first.
int catalog_history(const std::string& hashfile, bool human, std::FILE* out, std::FILE* err);

// -R PATH...: forgets the files under each PATH (found by a metadata scan of PATH through
// `reader`, the tree reader of the run's world) and the scan generation of their
// subvolumes, so the next run looks at them afresh.
int remove_from_catalog(const std::string& hashfile, const std::vector<std::string>& paths,
                        const RootReader& reader, std::FILE* out, std::FILE* err);

}  // namespace btrdedupe
