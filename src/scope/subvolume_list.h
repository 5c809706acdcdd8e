// btrdedupe --list-subvols PATH: the subvolumes of a filesystem, with what they hold.
#pragma once

#include <cstdio>
#include <string>

#include "src/scope/subvolume_selection.h"

namespace btrdedupe {

struct SubvolumeListOptions {
  std::string hashfile;  // "" or a catalog: says when each subvolume was last scanned
  bool human = false;
  bool json = false;
};

// Lists every subvolume of PATH's filesystem: id, path, read-only, the subvolume it is a
// snapshot of, generation, last scanned (with a hashfile: the generation the catalog holds
// against the current one), and bytes on disk exclusive to it and shared with others (from a
// metadata scan of every subvolume; no file data is read), as `ground` shows the
// filesystem. Returns the exit code.
int list_subvolumes_command(const std::string& path, const SubvolumeListOptions& options,
                            std::FILE* out, std::FILE* err, SubvolumeGround& ground);

}  // namespace btrdedupe
