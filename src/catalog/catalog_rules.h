// The rules a CatalogSession follows for one run. The scope and change rules are chosen
// once, when the session learns how the run relates to the catalog's last run
// (CatalogSession::unchanged_since_last_run); how the trees were read is chosen when the
// run's scan is made. The session's steps ask these what to do, so that the difference
// between a side run and the catalog's own run, or between pending duplicates and none,
// lives here and not in tests spread over the steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"

namespace btrdedupe {

// How a run's trees were read. Chosen by the scan that read them.
enum class TreeRead {
  // Read whole, by the job (a tree scan or a walk of the paths), or not read at all
  // (nothing changed). fingerprint() merges its files against every row.
  Whole,
  // CatalogSession::incremental_scan: only the inodes changed since the recorded
  // generations, and then the catalogued twins of the changed files.
  Changed,
  // CatalogSession::incremental_scan of a side run: its roots read whole by the session's
  // reader, so that catalogued twins outside them can join as sources.
  RootsWithSources,
  // CatalogSession::windowed_scan: windows of files, fingerprinted and matched in turn.
  Windows,
};

// Whether the run's figures count as an incremental run's (CatalogStats::incremental): it
// read only what changed since the last run.
constexpr bool counts_as_incremental(TreeRead read) { return read == TreeRead::Changed; }

// What CatalogSession::record() writes back at the run's end.
enum class RecordPath {
  // The generations (those our own dedupe raised, where nothing else changed), whether
  // duplicates wait, and the run. The rows went to the catalog at fingerprint().
  Whole,
  // The changed files' rows, rows moved or found stale, the rows of subvolumes gone, the
  // generations (held below files left to settle), whether duplicates wait, and the run.
  Changed,
  // The rows fingerprinted and those whose file was found gone, and the run. Never the
  // generations (they stay those of the catalog's own last run), and pending is only set.
  Side,
  // CatalogSession::record_windows: the rows went as the windows went.
  Windows,
};

// The subfolder rule: a run whose roots all lie at or below the catalog's roots, with the
// same options, is a *side run* within them; any other run is the catalog's own run, and
// its scope becomes the catalog's.
//
// A side run keeps the catalog's scope, generations and run of record: a row it does not
// see is outside its roots, not gone. It reads its roots whole, and the catalogued twins it
// finds outside them join as sources only (ScannedFile::outside_roots), never destinations.
class CatalogScopeRule {
 public:
  // The catalog's own run (also the rule of a session before unchanged_since_last_run).
  CatalogScopeRule() = default;
  // The rule for a run of scope `run` (roots as realpath() spells them) on a catalog whose
  // recorded scope is `recorded` (nullopt: none yet).
  static CatalogScopeRule of(const std::optional<CatalogScope>& recorded,
                             const CatalogScope& run);

  // Whether the run's scope replaces the catalog's (Catalog::set_scope).
  bool sets_catalog_scope() const { return kind_ == Kind::OwnRun; }
  // Whether the run may be read in windows: a windowed run writes every row again, and a
  // side run would lose the rows outside its roots.
  bool may_take_windows() const { return kind_ == Kind::OwnRun; }
  // Whether the run may read only the inodes changed since the recorded generations: those
  // are the catalog's own run's, and say nothing of a side run's roots being read before.
  bool may_read_changes_only() const { return kind_ == Kind::OwnRun; }
  // The roots the run's catalogued twins outside its own roots are reached from
  // (IncrementalScan::add_source_roots): the catalog's, for a side run; none otherwise.
  const std::vector<std::string>& source_roots() const { return catalog_roots_; }
  // Whether the rows a whole read of the run's roots did not meet are stale (their files
  // gone). Not in a side run: they lie outside its roots.
  bool unmet_rows_are_stale() const { return kind_ == Kind::OwnRun; }
  // Whether a verified catalogued twin that the run's scan does not admit joins as a
  // source outside the roots (a side run's) rather than losing its row as out of scope.
  bool outside_twins_are_sources() const { return kind_ == Kind::SideRun; }
  // Whether the run reaches catalogued twins in a subvolume: one it `scanned`, or, for a
  // side run, one that `existed()` when its scan began (under the catalog's roots). Asked
  // only of a side run: the answer costs a look through the filesystem's subvolumes.
  template <typename Existed>
  bool reaches_twins_in(bool scanned, const Existed& existed) const {
    return scanned || (kind_ == Kind::SideRun && existed());
  }
  // How a run whose trees were read as `read` records: a side run always as a side run.
  RecordPath record_path(TreeRead read) const;

 private:
  enum class Kind { OwnRun, SideRun };
  Kind kind_ = Kind::OwnRun;
  std::vector<std::string> catalog_roots_;  // a side run's source_roots()
};

// What counts as a changed file: the files a run fingerprints and matches. The others keep
// their rows, and serve only as candidate twins of the changed ones.
class ChangeRule {
 public:
  // A file with no row, or whose size, mtime or inode flags differ from its row. The
  // default, and the rule before unchanged_since_last_run.
  ChangeRule() = default;
  // Every file: the catalog's last run left duplicates it found without a dedupe
  // (Catalog::pending), and a dedupe run must match them again to dedupe them.
  static ChangeRule every_file() { return ChangeRule(true); }
  // The rule of a run after the catalog's last: every_file() when a dedupe run follows a
  // run that left duplicates pending.
  static ChangeRule after_last_run(bool dedupe, bool pending) {
    return dedupe && pending ? every_file() : ChangeRule();
  }

  // Whether a file with data counts as changed: `has_row` in the catalog, `row_differs`
  // from the file as scanned.
  bool changed(bool has_row, bool row_differs) const {
    return every_file_ || !has_row || row_differs;
  }
  // Whether the recorded generations tell what changed: a subvolume whose generation did
  // not move holds no changed file, and a read of the inodes changed since finds them all.
  // Not when every file counts.
  bool told_by_generations() const { return !every_file_; }

 private:
  explicit ChangeRule(bool every_file) : every_file_(every_file) {}
  bool every_file_ = false;
};

}  // namespace btrdedupe
