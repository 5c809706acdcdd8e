// The catalog: btrdedupe's SQLite hashfile. It makes re-runs incremental: what was
// fingerprinted, at which subvolume generation, and which roots and options a run used.
// docs/hashfile.md documents the schema and why it is shaped so.
//
// Contract:
// - open() refuses, and leaves untouched, anything that is not a btrdedupe catalog of the
//   same format (another program's SQLite file, garbage, a newer format), and a catalog of
//   another filesystem (bind()).
// - One run at a time: open() takes an exclusive lock for the life of the object; a
//   second run fails at once with a message naming the file.
// - Every update of a run happens in one transaction (commit()): a crash or SIGKILL
//   leaves the catalog as the last completed run left it.
#pragma once

#include <sqlite3.h>

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/result.h"

namespace btrdedupe {

class CatalogMemoryRows;

// 2 added files.parent (deletions found through the directories that changed); 3 replaced
// the rows of 128 KiB-aligned block hashes by the matcher's anchors (src/fingerprint/sum_anchors.h), so
// a shifted copy finds its twin across windows and runs; 4 added files.short_hash (a
// one-sector file's proven data hash). An older catalog is upgraded in place
// (upgraded_from()): it keeps its scope and run history. From format 1 or 2 its next run
// reads the trees whole and writes every file's row afresh (from the csum tree: no data is
// read); from 3 it keeps its rows and generations too (upgrade_rewrites_rows()).
inline constexpr int kCatalogFormat = 4;
constexpr bool upgrade_rewrites_rows(int from) { return from < 3; }

// What the catalog knows of one file: keyed by (subvolume, inode), never by path.
struct CatalogFile {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t flags = 0;                 // inode flags (nodatasum matters for matching)
  std::optional<uint64_t> whole_hash; // content hash of the whole file, when complete
  uint64_t parent = 0;                // directory of its first name; 0: not known
  // XXH3-64 of a one-sector file's data, once a proof read it (src/fingerprint/short_file_proof.h):
  // while the row holds, a twin found by it is not read again.
  std::optional<uint64_t> short_hash;
};

struct FileKey {
  uint64_t subvolume = 0, inode = 0;
  // Key order: by subvolume, then inode, as the files table's primary key sorts.
  auto operator<=>(const FileKey&) const = default;
};
struct FileKeyHash {
  size_t operator()(const FileKey& k) const { return k.subvolume * 0x9E3779B97F4A7C15ULL ^ k.inode; }
};

// The scope a catalog was made for: replaying it repeats these.
struct CatalogScope {
  std::vector<std::string> roots;
  std::string options;  // the options that shape results, as text ("recursive=1 ...")
  bool dedupe = false;  // whether the run deduped: replayed, but not part of the scope
};

// What the catalog did for one run (part of the run's report).
struct CatalogStats {
  bool used = false;
  bool unchanged = false;        // nothing changed since the last run: no tree was read
  uint64_t files_changed = 0;    // new or changed since the last run: fingerprinted
  uint64_t files_known = 0;      // unchanged: not fingerprinted again
  uint64_t candidates = 0;       // known files fingerprinted as possible twins of changed ones
  uint64_t stale_rows = 0;       // rows of files that are gone, removed
  // Changed files left for a later run because they changed less than JobOptions::
  // settle_seconds ago (still being written, perhaps), and when the last of them settles
  // (unix seconds; 0 when none waits).
  uint64_t files_settling = 0;
  int64_t settled_at = 0;
  // Incremental: only leaves newer than each subvolume's recorded generation were read,
  // and only changed files and their twins are in the run's figures.
  bool incremental = false;
  // The hashfile was in an older format, upgraded in place by this run (Catalog::open).
  std::optional<int> upgraded_from;
};

struct RunRecord {
  int64_t started = 0, finished = 0;  // unix seconds
  std::string roots;
  uint64_t files = 0, bytes_read = 0, bytes_deduped = 0;
  int exit_code = 0;
  // Every duplicate the run found was deduped or refused for what the file is: nothing is
  // left for the next run but what changes after it (see Catalog::pending).
  bool complete = false;
};

class Catalog {
 public:
  // Opens or creates `path`. Errors: locked by another run, not a btrdedupe catalog, newer
  // format, unreadable.
  static btrfs::Result<std::unique_ptr<Catalog>> open(const std::string& path);
  // A new, empty catalog in memory (SQLite's ":memory:"): the same schema and SQL, no file
  // and no lock, gone when closed. For unit tests of what runs on the catalog.
  static btrfs::Result<std::unique_ptr<Catalog>> open_in_memory();
  ~Catalog();
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  // Ties a new catalog to a filesystem, or checks an existing one belongs to it.
  btrfs::Result<void> bind(const std::string& fsid);

  std::optional<CatalogScope> scope() const;
  // Changing the scope (other roots or options) forgets what was scanned: results of a
  // different scope cannot be reused safely.
  btrfs::Result<void> set_scope(const CatalogScope& scope);

  // Whether duplicates found by an earlier run may still wait for a dedupe: that run only
  // reported (no -d), or stopped early, ran out of space or met a send. A dedupe run then
  // matches every file again, not only those changed since (src/catalog/catalog_session.h).
  bool pending() const;
  btrfs::Result<void> set_pending(bool pending);

  // Subvolume id -> generation it was completely scanned at.
  std::unordered_map<uint64_t, uint64_t> subvolume_generations() const;
  std::unordered_map<FileKey, CatalogFile, FileKeyHash> files() const;
  // Every row, in key order (subvolume, inode): a run merges them against its scan without
  // holding them. `fn` must not update the catalog.
  void for_each_file(const std::function<void(const FileKey&, const CatalogFile&)>& fn) const;
  // Files whose whole content hash is `hash` / that hold an anchor with hash `hash`.
  std::vector<FileKey> files_with_hash(uint64_t hash) const;
  std::vector<FileKey> files_with_anchor(uint64_t hash) const;
  // One file's row, by key.
  std::optional<CatalogFile> file(const FileKey& key) const;
  // Inodes of the rows whose first name is in directory `dir` of `subvolume`.
  std::vector<uint64_t> files_in_directory(uint64_t subvolume, uint64_t dir) const;
  uint64_t file_count(uint64_t subvolume) const;

  // Updates, all inside the run's transaction (begin() ... commit()).
  btrfs::Result<void> begin();
  // begin() unless the run's transaction is open already: a run's steps that write
  // (a window, the record) join the transaction an earlier one opened.
  btrfs::Result<void> begin_unless_writing() {
    return writing_ ? btrfs::Result<void>{} : begin();
  }
  // Between begin() and commit().
  bool writing() const { return writing_; }
  // `anchors`: the file's distinct anchor hashes (catalog_anchors()).
  btrfs::Result<void> put_file(const FileKey& key, const CatalogFile& file,
                               const std::vector<uint64_t>& anchors);
  // put_file() for a file that has no rows yet (a windowed run writes its rows afresh):
  // no delete first. Should it have some, its file row is replaced and its old anchors
  // stay, which can only propose a candidate that verification against the tree rejects.
  btrfs::Result<void> add_file(const FileKey& key, const CatalogFile& file,
                               const std::vector<uint64_t>& anchors);
  btrfs::Result<void> remove_file(const FileKey& key);
  btrfs::Result<void> set_parent(const FileKey& key, uint64_t parent);
  // CatalogFile::short_hash of the row of `key`, if it has one.
  btrfs::Result<void> set_short_hash(const FileKey& key, uint64_t hash);
  // Removes every row of a subvolume (deleted, or no longer under the roots).
  btrfs::Result<void> remove_subvolume_files(uint64_t subvolume);
  btrfs::Result<void> set_subvolume_generations(const std::unordered_map<uint64_t, uint64_t>& gens);
  // `of_scope`: a run of the catalog's own roots; false for a run of subfolders of them
  // (CatalogSession), which leaves last_run_started() as it was.
  btrfs::Result<void> add_run(const RunRecord& run, bool of_scope = true);
  btrfs::Result<void> commit();

  std::vector<RunRecord> runs() const;
  // When the latest recorded run of the catalog's own roots started (unix seconds; the
  // generations it recorded date from then); nullopt before the first.
  std::optional<int64_t> last_run_started() const;

  // Totals for -L / --stats.
  struct Counts {
    uint64_t files = 0, files_with_hash = 0, anchors = 0;
    uint64_t bytes = 0;            // sum of file sizes
    uint64_t duplicate_files = 0;  // files whose whole hash another file shares (2nd and later)
    uint64_t duplicate_bytes = 0;  // their bytes: shared already, or dedupable
    uint64_t duplicate_groups = 0;
  };
  Counts counts() const;
  std::optional<std::string> fsid() const;
  // Files per subvolume, for -L.
  std::unordered_map<uint64_t, uint64_t> files_per_subvolume() const;
  // Forgets a subvolume's scan generation, so the next run reads its tree again.
  btrfs::Result<void> forget_subvolume(uint64_t id);
  const std::string& path() const { return path_; }
  // For a catalog that lives for one run (CatalogSession::open_temporary): no journal and
  // no syncs, as a crash loses nothing it must keep (the next run removes its file). A
  // page cache of 8 MiB instead of 2 was no faster and cost 8 copies' run 62.4 MiB peak.
  // Its file rows are held in memory (src/catalog/catalog_memory_rows.h) until they take
  // `memory_rows_bytes`, then written to SQLite; a call that reads the tables as a whole
  // (files(), counts(), ...) writes them first. Call it on a new, empty catalog.
  btrfs::Result<void> use_for_one_run(size_t memory_rows_bytes = kOneRunMemoryRowsBytes);
  // 16 MiB: the rows of two copies of linux-source (~102,000 files) with room to spare,
  // which is every row a run without --hashfile keeps at any number of copies.
  static constexpr size_t kOneRunMemoryRowsBytes = 16u << 20;
  // What the rows held in memory take now (0 without use_for_one_run()).
  size_t held_row_bytes() const;
  // Whether use_for_one_run() was called: the rows serve this run only.
  bool for_one_run() const { return memory_rows_ != nullptr; }
  // The format open() found and upgraded to kCatalogFormat; nullopt when it was current.
  std::optional<int> upgraded_from() const { return upgraded_from_; }

 private:
  Catalog() = default;
  btrfs::Result<void> exec(const char* sql) const;
  // Checks what open() found (a btrdedupe catalog of a known format, or an empty file),
  // creates the schema or upgrades it.
  btrfs::Result<void> initialize();
  btrfs::Result<void> upgrade(int64_t from);  // to kCatalogFormat, in one transaction
  btrfs::Error error(const std::string& what) const;
  sqlite3_stmt* prepare(const char* sql) const;
  // A prepared statement kept for the catalog's life (hot paths), reset and unbound.
  sqlite3_stmt* cached(const char* sql) const;
  btrfs::Result<void> sql_add_file(const FileKey& key, const CatalogFile& file,
                                   const std::vector<uint64_t>& anchors) const;
  // The rows held in memory, written to SQLite (in a savepoint of the run's transaction).
  // A failure is kept in write_error_ and returned by the next update.
  void write_memory_rows() const;
  btrfs::Result<void> memory_rows_written() const;

  std::string path_;
  std::optional<int> upgraded_from_;
  std::unique_ptr<CatalogMemoryRows> memory_rows_;  // held rows: set for one run
  size_t memory_rows_bytes_ = 0;
  mutable bool rows_in_sql_ = false;  // some rows were written to SQLite: read both
  mutable std::optional<btrfs::Error> write_error_;
  bool writing_ = false;  // begin() ... commit()
  sqlite3* db_ = nullptr;
  btrfs::Fd lock_;
  mutable std::unordered_map<const char*, sqlite3_stmt*> statements_;
};

}  // namespace btrdedupe
