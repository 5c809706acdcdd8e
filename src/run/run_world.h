// Everything a job reaches beyond its options, chosen by whoever starts the run: where the
// filesystem of a path stands (may it be searched, which kind), how each reader reads
// roots, the kernel each reader's run asks for dedupes and freed space, and the subvolumes
// a selection chooses from. The command line runs on the machine's own (machine_world);
// unit tests hand run_job an in-memory btrfs and a scripted kernel, so a whole run of every
// source runs without root.
#pragma once

#include <string>

#include "btrfs/result.h"
#include "src/read/reader_kind.h"
#include "src/read/root_reader.h"
#include "src/run/run_kernel.h"
#include "src/scope/subvolume_selection.h"

namespace btrdedupe {

// Contract: what it returns lives as long as the world; calls come from the run's thread.
class RunWorld {
 public:
  virtual ~RunWorld();
  // The filesystem of `path` as a reader choice needs it (choose_reader). Errors: the
  // path cannot be opened.
  virtual btrfs::Result<ReaderGround> ground(const std::string& path) = 0;
  virtual const RootReader& reader(ReaderKind kind) = 0;
  // What a run read by `kind` asks of the filesystem beyond its reads.
  virtual RunKernel& kernel(ReaderKind kind) = 0;
  // The filesystem's subvolumes, their mounts and their trees read whole, as --subvol,
  // --exclude-subvol and --all-subvols choose and read them.
  virtual SubvolumeGround& subvolume_ground() = 0;
  // The id of the filesystem `path` is on, as --fdupes input groups its files by it
  // (src/scope/fdupes_input.h's FilesystemIdentity): "" with *why saying why it cannot be
  // used (want_file: it must be a regular file).
  virtual std::string filesystem_id(const std::string& path, bool want_file,
                                    std::string* why) = 0;
};

// The machine's own: open(2), the tree-search and FIEMAP readers, FIDEDUPERANGE.
RunWorld& machine_world();

}  // namespace btrdedupe
