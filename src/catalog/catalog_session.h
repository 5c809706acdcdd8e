// A run's use of the catalog: skip what has not changed since the last run, fingerprint
// only changed files and the catalogued files they may duplicate, and record the result.
// Which files count as changed, and what a side run within the catalog's roots may do,
// are the rules of src/catalog/catalog_rules.h, chosen at unchanged_since_last_run.
//
// Incremental rule: a subvolume whose generation equals the one recorded has not changed
// at all (any write to its tree raises it). When every scanned subvolume is unchanged, the
// run ends before reading any tree. When every subvolume to scan has a recorded generation,
// the run is incremental (incremental_scan): only the tree leaves written since are read,
// and the run's scan holds only the files changed since and, after fingerprint(), the
// catalogued files they may duplicate, each verified against the tree before use.
// Otherwise (a new subvolume, another scope, a first run) the trees are read whole and a
// file counts as changed by the ChangeRule; only changed files and their candidate twins
// are fingerprinted and matched.
//
// Subfolder rule (CatalogScopeRule): a run whose roots all lie at or below the catalog's
// roots, with the same options, is a *side run*: it keeps the catalog's scope, generations
// and run of record (last_run_started), and reads its own roots whole. Its files are
// fingerprinted and looked up in the catalog, and the catalogued twins found are verified
// against the tree like an incremental run's candidates; those outside its roots join as
// sources only (ScannedFile::outside_roots), never destinations. It writes the rows of the
// files it fingerprinted and removes only rows whose file it found gone: a row it does not
// see is not gone, only outside its roots. It never clears Catalog::pending.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "btrfs/result.h"
#include "src/match/batch_roles.h"
#include "src/catalog/catalog.h"
#include "src/catalog/catalog_rules.h"
#include "src/fingerprint/fingerprint.h"
#include "src/read/incremental_scan.h"
#include "src/read/root_reader.h"
#include "src/read/scan_scope.h"
#include "src/run/job_options.h"
#include "src/read/tree_scan.h"
#include "src/catalog/twins_across_windows.h"

namespace btrdedupe {

class FileExtentIndex;
class SnapshotFamily;

// The (inode, size, mtime) states of a subvolume's files, as a digest that does not depend
// on their order: two scans compare without a copy of either's states (a set of 157k
// tuples each was ~10 MB at the peak of a run that dedupes).
struct FileStateDigest {
  uint64_t count = 0, sum = 0, xored = 0;
  bool operator==(const FileStateDigest&) const = default;
};

// The options of a run given a hashfile and no paths: the paths and the options that shape
// results of the catalog's last run (its replay), resolved before the run starts. Options
// with paths come back as given.
btrfs::Result<JobOptions> replayed_options(const Catalog& catalog, JobOptions options);

class CatalogSession {
  struct Made {};  // only on() and open_temporary() can construct one

 public:
  CatalogSession(Made, std::unique_ptr<Catalog> c) : catalog_(std::move(c)) {}
  // A session on a catalog open already (Catalog::open, or Catalog::open_in_memory in unit
  // tests), for a run of `options` (as resolved: replayed_options first) that reads its
  // roots with `reader` (its filesystem's identity and generations come from it).
  static btrfs::Result<std::unique_ptr<CatalogSession>> on(
      std::unique_ptr<Catalog> catalog, const JobOptions& options,
      const RootReader& reader = reader_of(ReaderKind::Tree));

  // A catalog in a new temporary file (in $TMPDIR, else /var/tmp: on disk, not in memory),
  // removed when the session ends: what a run read in windows without --hashfile matches
  // each window against. Scope and paths come from `options`.
  static btrfs::Result<std::unique_ptr<CatalogSession>> open_temporary(
      const JobOptions& options, const RootReader& reader = reader_of(ReaderKind::Tree));
  ~CatalogSession();
  CatalogSession(const CatalogSession&) = delete;
  CatalogSession& operator=(const CatalogSession&) = delete;

  // Binds the catalog to the filesystem of the job's paths and to its scope, and reads the
  // subvolume generations before any tree is read. True when nothing changed.
  // `will_scan` (a flat subvolume selection): the subvolumes the run is to scan; one the
  // last run did not scan (a new snapshot under --all-subvols) is a change.
  btrfs::Result<bool> unchanged_since_last_run(const JobOptions& options,
                                               const std::vector<uint64_t>* will_scan = nullptr);

  // The scan of an incremental run of `scope`: the files whose inode changed since the
  // recorded generations and are new or differ from their row. Rows of files found gone
  // (or out of scope) are removed at record(). nullopt: the run must read the trees whole.
  btrfs::Result<std::optional<ScanResult>> incremental_scan(const ScanScope& scope,
                                                           const ScanOptions& options);

  // A full run read in windows of files, for trees too large to hold whole (its memory then
  // follows the window, not the tree). Each window's files are fingerprinted, their rows
  // written at once, and the files of earlier windows they may duplicate are looked up in
  // the catalog and read from the tree, as an incremental run does with changed files.
  // Possible when may_take_windows(); read-only snapshots fold by inode identity
  // (IncrementalScan::read_window). The result is the run's base (roots,
  // filesystem, subvolumes, no file); nullopt: the run must scan whole.
  btrfs::Result<std::optional<ScanResult>> windowed_scan(const ScanScope& scope,
                                                        const ScanOptions& options);
  // Fills `window` (the base's roots, filesystem and subvolumes, no file) with the next
  // window of at most `max_files` files. False once the trees are read to their end (the
  // window may still hold files then). `added`: sees each file as read (read_window's).
  btrfs::Result<bool> next_window(ScanResult& window, size_t max_files,
                                  const IncrementalScan::FileAdded& added = nullptr);
  // The windows' reader, after windowed_scan(): which files their windows have passed.
  const IncrementalScan& window_reader() const { return *incremental_; }
  // windowed_scan() over a scan made already: IncrementalScan::of_tree_source in unit
  // tests, whose `base` it filled. With read_csums_from(), the windows need no kernel
  // until they dedupe.
  btrfs::Result<std::optional<ScanResult>> windowed_scan(std::unique_ptr<IncrementalScan> scan,
                                                        ScanResult base);
  // Where fingerprints read the csum tree (btrdedupe::fingerprint's `csums`; nullptr, the
  // default: the kernel's). It must outlive the session.
  void read_csums_from(btrfs::TreeSource* csums) { csums_ = csums; }
  // How far the windows have read the trees, 0..1 (IncrementalScan::read_fraction).
  double read_fraction();
  // Whether this run may be read in windows: any run of the catalog's roots that reads
  // its trees whole. Its rows are then written again from scratch (start_windows), which
  // costs the fingerprints of unchanged files again (from the csum tree, no data read) but
  // keeps memory to a window where a merge against the whole scan would hold every file.
  // Never in a side run (its rows outside the roots must stay).
  bool may_take_windows() const { return scope_rule_.may_take_windows(); }
  // Files the catalog holds rows of: about the files a whole read of its trees would hold
  // (one that read them in windows wrote every row afresh), for choosing windows at once.
  uint64_t catalogued_files() const;
  // After fingerprint(): the role of each file of the scan (by index). A window's files
  // from earlier windows are EarlierTwin, or EarlierGroupedTwin when a group of an earlier
  // window held them (a window takes one twin per whole-file hash, so its group grows that
  // group and is not counted again); with look-ahead, AheadTwin and Settled as below. An
  // incremental or side run's catalogued twins, and the unchanged files a --hashfile run
  // that read its trees whole fingerprints as twins of its changed ones, are Candidate.
  const BatchRoles& roles() const { return roles_; }

  // A windowed dedupe run's first pass (src/catalog/catalog_lookahead.cpp): every window's rows
  // are written before any dedupe, so that each window also takes its files' twins from
  // windows still to come ("ahead" twins) and dedupes a source once for all its copies,
  // not once per window holding one. Files whose sums need a data read (compressed,
  // nodatasum) get their rows in their own window: the first pass reads no file data.
  btrfs::Result<void> index_window(ScanResult& window);
  // After the first pass: the windows start again at the first file, to look ahead
  // (WindowTwins::look_ahead). roles() then marks a window's ahead twins (AheadTwin),
  // which it counts in its figures as its own files, and its own files that an earlier
  // window took as ahead twins (Settled), counted there and left out of this window's.
  void rewind_windows() { incremental_->rewind_windows(); }

  // Fingerprints the changed files of `scan` and the catalogued files they may duplicate;
  // other files keep empty (unknown) sums and are left out of matching. An incremental
  // run's candidates are read from the tree (a row whose file is gone or changed is never
  // used) and added to `scan`.
  // `threads`: data-read workers, as for btrdedupe::fingerprint (0: by the storage).
  btrfs::Result<FingerprintResult> fingerprint(ScanResult& scan, CatalogStats& stats,
                                               unsigned threads = 0);
  // fingerprint() of a window (after windowed_scan): `twins` says what the other windows
  // took and kept (src/catalog/twins_across_windows.h), and keeps what this one reads.
  btrfs::Result<FingerprintResult> fingerprint_window(ScanResult& window, CatalogStats& stats,
                                                      TwinsAcrossWindows& twins,
                                                      unsigned threads = 0);

  // The data hashes a proof read (ShortFileProof::hashes_read, by file of `scan`) go to
  // their files' rows (CatalogFile::short_hash), now or at record(): a later window or
  // run that takes such a file as a twin does not read it again.
  btrfs::Result<void> keep_short_hashes(const ScanResult& scan,
                                        std::span<const std::pair<uint32_t, uint64_t>> hashes);

  // The re-read after a window's dedupe: the files marked in `which` (its destinations),
  // in `window` itself (reread_in_place).
  btrfs::Result<void> confirm_window(ScanResult& window, const std::vector<bool>& which) {
    return reread_in_place(incremental_->trees(), window, which);
  }
  // The re-read after an incremental run's dedupe: the files of `scan` only.
  btrfs::Result<ScanResult> confirm(const ScanResult& scan) {
    return reread_files(incremental_->trees(), scan);
  }

  // Writes rows for the files fingerprinted, drops rows of files gone from the scan,
  // records each subvolume's generation and the run, as the RecordPath of the scope rule
  // and the way the trees were read says. `after`: the re-scan made after dedupe (nullptr
  // when nothing was deduped). A full run's rows went to the catalog in fingerprint() and
  // its files' states were taken then: its `scan` needs only its roots and subvolumes here
  // (the job frees its files before the confirmation scan). A run read in windows records
  // with record_windows() (record() passes it on).
  btrfs::Result<void> record(const ScanResult& scan, const ScanResult* after,
                             const RunRecord& run);
  // record() of a run read in windows (after windowed_scan), whose rows went to the
  // catalog as the windows went: the rows of twins found gone, the generations and the
  // run. `base`: the run's base; `after`: it too when the run deduped (nullptr otherwise).
  btrfs::Result<void> record_windows(const ScanResult& base, const ScanResult* after,
                                     const RunRecord& run);

  const std::string& path() const { return catalog_->path(); }

 private:

  struct Fingerprinted {
    CatalogFile row;
    std::vector<uint64_t> anchors;
  };
  // Which files of `scan` the first pass gives rows (index_window).
  static std::vector<bool> summed_from_csums(const ScanResult& scan);
  // The row and anchors of file i of `scan`, from its sums.
  Fingerprinted fingerprinted(const ScanResult& scan, const FileExtentIndex& index,
                              const FileSumsView& sums, uint32_t i) const;

  // fingerprint()'s steps when the trees were read whole: the scan's files against the
  // catalog's rows, the rows updated, the changed files' rows written and twins marked.
  struct RowMerge;
  RowMerge merge_rows(const ScanResult& scan, CatalogStats& stats) const;
  btrfs::Result<void> update_rows(const ScanResult& scan, RowMerge& merge);
  btrfs::Result<std::vector<bool>> put_rows(const ScanResult& scan, const RowMerge& merge,
                                            const FingerprintResult& fp);

  btrfs::Result<std::optional<ScanResult>> find_changed(ScanResult scan);
  btrfs::Result<void> take_changed_file(ScanResult& scan, const FileKey& key);
  btrfs::Result<void> check_directory(uint64_t subvolume, uint64_t dir);
  // fingerprint() of an incremental or side run's batch, or of a window: the scan's own
  // files and the catalogued twins taken by `twins`'s rules (src/catalog/catalog_twins.cpp).
  btrfs::Result<FingerprintResult> fingerprint_with_twins(ScanResult& scan, CatalogStats& stats,
                                                          TwinsAcrossWindows& twins);
  // fingerprint_with_twins()'s steps: the catalogued twins of the changed files are
  // gathered, then verified against the tree and added.
  struct Candidates;
  // Takes the candidates among `keys` (the files with one whole-file hash or one anchor);
  // the number taken from earlier windows.
  size_t consider_twins(const std::vector<FileKey>& keys, bool whole, Candidates& c) const;
  btrfs::Result<void> sum_twins(const ScanResult& scan, const std::vector<uint32_t>& order,
                                const std::vector<bool>& wanted, TwinsAcrossWindows& twins,
                                FingerprintResult& fp);
  btrfs::Result<void> put_rows_and_find_twins(const ScanResult& scan,
                                              const FingerprintResult& fp,
                                              const std::vector<bool>& own_wanted,
                                              Candidates& c);
  btrfs::Result<void> verify_candidates(ScanResult& scan, Candidates& c);
  btrfs::Result<void> verify_in_order(ScanResult& scan, uint64_t subvolume,
                                      const std::vector<uint64_t>& inodes,
                                      const SnapshotFamily& family, TwinsAcrossWindows& twins);
  btrfs::Result<void> verify_candidate(ScanResult& scan, uint64_t subvolume, uint64_t inode,
                                       const InodeState* state, const SnapshotFamily& family);
  unsigned read_threads_ = 0;
  btrfs::TreeSource* csums_ = nullptr;  // read_csums_from()
  // Chosen at unchanged_since_last_run: how this run relates to the catalog's last one.
  CatalogScopeRule scope_rule_;
  ChangeRule change_rule_;
  // Chosen when the run's scan is made (incremental_scan, windowed_scan): fingerprint()
  // and record() follow it.
  TreeRead read_ = TreeRead::Whole;
  // A side run's roots read whole, with the catalog's as the sources' roots.
  btrfs::Result<std::optional<ScanResult>> side_scan(
      btrfs::Result<std::unique_ptr<IncrementalScan>> scan, ScanResult out);
  // fingerprint() of a run read whole by the job: the scan merged against every row.
  btrfs::Result<FingerprintResult> fingerprint_merged(ScanResult& scan, CatalogStats& stats);
  btrfs::Result<void> record_side_run(const RunRecord& run);
  btrfs::Result<uint64_t> generation_after_dedupe(uint64_t subvolume, uint64_t start,
                                                  uint64_t now, const ScanResult& scan,
                                                  const ScanResult& after);
  // The generations once our own dedupe is committed (syncfs first: they only move when a
  // transaction commits).
  btrfs::Result<std::unordered_map<uint64_t, uint64_t>> generations_after_commit() const;
  btrfs::Result<void> record_incremental(const ScanResult& scan, const ScanResult* after,
                                         const RunRecord& run);
  btrfs::Result<void> record_whole(const ScanResult& scan, const ScanResult* after,
                                   const RunRecord& run);

  btrfs::Result<std::optional<ScanResult>> start_windows(
      btrfs::Result<std::unique_ptr<IncrementalScan>> scan, ScanResult base);

  std::unique_ptr<Catalog> catalog_;
  const RootReader* reader_ = &reader_of(ReaderKind::Tree);
  std::string temporary_;  // the catalog's file, when open_temporary() made it
  BatchRoles roles_;
  // The rows serve only this run's windows (a temporary catalog, no first pass): a copy's
  // row goes in only while it tells a later window something (put_rows_and_find_twins).
  bool scratch_rows_only(const TwinsAcrossWindows& twins) const {
    return twins.rows_for_later_windows() && catalog_->for_one_run() &&
           !twins.rows_written_ahead();
  }
  std::string first_path_;
  std::unordered_map<uint64_t, uint64_t> generations_at_start_;
  uint64_t block_size_ = 128 * 1024;
  double settle_seconds_ = 0;  // JobOptions::settle_seconds
  std::unordered_map<uint64_t, FileStateDigest> states_at_scan_;  // per subvolume

  // Incremental runs keep their rows until record() (few: the changed files).
  std::unordered_map<FileKey, Fingerprinted, FileKeyHash> fingerprinted_;

  // The reader of the files the session reads itself (incremental_scan, windowed_scan):
  // changed inodes, windows, a side run's roots, and catalogued twins
  // (src/catalog/catalog_incremental.cpp, src/catalog/catalog_twins.cpp).
  std::unique_ptr<IncrementalScan> incremental_;
  std::unordered_map<uint64_t, uint64_t> recorded_generations_;
  std::unordered_set<FileKey, FileKeyHash> seen_;    // inodes looked at already
  std::unordered_set<FileKey, FileKeyHash> stale_;   // rows to remove
  std::vector<std::pair<FileKey, uint64_t>> moved_;  // rows whose first name moved
  // Files left to settle (JobOptions::settle_seconds): per subvolume, the generation the
  // record may not pass (the oldest such file's transid - 1), so the next run finds them.
  std::unordered_map<uint64_t, uint64_t> settling_floor_;
  uint64_t files_settling_ = 0;
  int64_t settled_at_ = 0;
  // Whether a changed file of `subvolume` the run would read waits to settle; notes it if so.
  btrfs::Result<bool> left_to_settle(uint64_t subvolume, const InodeState& state);
  // Data hashes of twins from their rows, until fingerprint() gives them to the proof.
  std::unordered_map<FileKey, uint64_t, FileKeyHash> twin_short_hashes_;
  // keep_short_hashes() of rows written at record().
  std::unordered_map<FileKey, uint64_t, FileKeyHash> short_hashes_;
  btrfs::Result<void> write_short_hashes();
  uint64_t known_rows_ = 0, changed_with_row_ = 0;
};

}  // namespace btrdedupe
