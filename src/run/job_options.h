// What a run is asked to do: the command line's options as the engine takes them (the
// command line builds them, a hashfile's replay fills them from its last run).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/dedupe/dedupe_engine.h"
#include "src/dedupe/round_pace.h"
#include "src/plan/remainder_plan.h"
#include "src/read/reader_kind.h"
#include "src/scope/subvolume_selection.h"

namespace btrdedupe {

// A full run holds ~300 bytes per file at its peak: up to this many files it reads the
// tree whole (~58 MiB), beyond it in windows.
inline constexpr uint64_t kWholeRunFiles = 180000;
// Files per window when the run chose windows itself. A window also holds up to two
// earlier twins per file.
inline constexpr uint64_t kWindowFiles = 16384;

struct JobOptions {
  std::vector<std::string> paths;
  bool recursive = false;
  bool dedupe = false;
  uint64_t min_file_size = 0;
  uint64_t block_size = 128 * 1024;
  bool partial = true;             // range matches inside non-identical files
  bool dedupe_readonly = false;    // allow destinations in read-only snapshots
  unsigned io_threads = 0;         // dedupe workers; 0: by the storage (src/dedupe/io_threads.h)
  Prefetch prefetch = Prefetch::Fadvise;
  bool list_groups = false;        // keep every group's member paths in the report
  std::string hashfile;            // SQLite catalog; "" = in memory (see src/catalog/catalog.h)
  // Files per window of a run read in windows (-B): memory follows the window, not the
  // tree. 0: automatic, a tree of up to whole_run_files files is read whole (fastest), a
  // larger one in windows of kWindowFiles (CatalogSession::windowed_scan).
  uint64_t window_files = 0;
  uint64_t whole_run_files = kWholeRunFiles;  // the automatic choice's limit (tests lower it)
  // Leaves files and nested subvolumes out of the scan (see ScanOptions::exclude).
  std::function<bool(const std::string& root, const std::string& relative)> exclude;
  // The patterns behind `exclude`, as given: part of a hashfile's scope.
  std::vector<std::string> exclude_patterns;
  // --subvol, --exclude-subvol, --all-subvols (src/scope/subvolume_selection.h). With a flat
  // selection the paths only name the filesystem (they must all be on one).
  SubvolumeSelection subvolumes;
  // --reader: the reader asked for; nullopt: the one the filesystem and privileges allow.
  std::optional<ReaderKind> reader;
  // Set (by a signal handler) to stop cleanly: no new dedupe round starts, no new
  // filesystem's dedupe starts; the report says so (JobReport::stopped).
  const std::atomic<bool>* stop = nullptr;
  // An incremental run leaves a changed file for a later run while its last change
  // (ctime, mtime) is less than this many seconds old: it may still be being written
  // (CatalogStats::files_settling). 0: every changed file is read. --follow sets it.
  double settle_seconds = 0;
  // Asked before each dedupe round starts (src/dedupe/round_pace.h): a follower pauses
  // there while the machine is busy, or to keep to a read rate. nullptr: never waits.
  RoundPace* pace = nullptr;
  // A time-boxed run (--max-runtime): dedupe the groups that share the most bytes first and
  // list, per group, whether it was done or left (FilesystemReport::work).
  bool most_valuable_first = false;
  // Rewrite small remainders so that their extents can be freed (src/plan/remainder_plan.h);
  // --dedupe-options=norewrite turns it off. The budget: bytes written per filesystem.
  bool rewrite_remainders = true;
  uint64_t rewrite_budget = RemainderRules{}.budget_bytes;
};

}  // namespace btrdedupe
