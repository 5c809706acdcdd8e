#include "src/run/job.h"

#include <cerrno>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "btrfs/subvolume.h"
#include "src/catalog/catalog_session.h"
#include "src/run/batch_loop.h"
#include "src/read/root_reader.h"
#include "src/run/job_selection.h"
#include "src/run/path_scans.h"
#include "src/run/run_context.h"
#include "src/run/run_mode.h"
#include "src/run/run_stages.h"
#include "src/run/run_world.h"
#include "src/scope/subvolume_selection.h"
#include "src/run/whole_scan_source.h"
#include "src/run/window_source.h"

namespace btrdedupe {
namespace {

// One call of run_job: the options as resolved (a replay's from the hashfile, a
// selection's as ids), the catalog, and the report the ways of reading fill.
class Job {
 public:
  Job(const JobOptions& options, ProgressSink* progress, RunWorld& world)
      : o_(options), progress_(progress), world_(world) {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    started_at_ = {now.tv_sec, static_cast<uint32_t>(now.tv_nsec)};
  }

  // The story of a run: what it has to go on, then the ways to read the trees in order of
  // preference (next_run_mode), each tried until one reads them or ends the run.
  void run() {
    if (!open_catalog() || !select()) return;
    RunFacts facts;
    facts.catalog = catalog_ != nullptr;
    facts.walks_paths = reader_->kind() == ReaderKind::Paths;
    if (catalog_) {
      const auto unchanged = unchanged_since_last_run();
      if (!unchanged) return;
      facts.unchanged = *unchanged;
    }
    scan_options_ = scan_options();
    facts.nothing_selected = flat() && selection_->roots.empty();
    facts.windows_requested = o_.window_files != 0;
    // With a hashfile, asked once its incremental scan declined: of its rows as they stand then.
    facts.may_take_windows = !catalog_;
    for (;;) {
      switch (next_run_mode(facts)) {
        case RunMode::Unchanged:
          return record_unchanged();
        case RunMode::Incremental:
          if (run_incremental()) return;
          facts.incremental_declined = true;
          facts.may_take_windows = catalog_->may_take_windows();
          facts.catalogued_past_cap = catalog_->catalogued_files() > o_.whole_run_files;
          break;
        case RunMode::NothingSelected:
          report_.path_errors.push_back("no subvolume left to scan on the filesystem of " +
                                        o_.paths.front());
          return;
        case RunMode::EstimateFiles:
          facts.files_estimated = true;
          report_.estimated_files = estimated_files();
          // A margin for the estimate's spread: near the cap, the capped read tells.
          facts.estimated_past_cap = report_.estimated_files > o_.whole_run_files / 4 * 5;
          break;
        case RunMode::Windows:
          if (run_windows()) return;
          facts.windows_declined = true;
          break;
        case RunMode::WholeCapped:
          scan_options_.max_files = o_.whole_run_files;
          if (run_whole()) return;
          facts.too_many_files = true;
          ++report_.whole_scans_abandoned;
          break;
        case RunMode::Whole:
          scan_options_.max_files = 0;  // from the start, and never too many files
          run_whole();
          return;
      }
    }
  }

  JobReport finish() && {
    report_.options = o_;  // as run
    return std::move(report_);
  }

 private:
  // The catalog first: a replay takes its paths and options from it (resolved here, before
  // anything reads them), and an unchanged tree is not read.
  bool open_catalog() {
    std::unique_ptr<Catalog> catalog;
    if (!o_.hashfile.empty()) {
      auto opened = Catalog::open(o_.hashfile);
      auto options = opened ? replayed_options(**opened, o_) : btrfs::Result<JobOptions>(opened.error());
      if (!options) return fail(options.error());
      o_ = std::move(*options);
      catalog = std::move(*opened);
    }
    if (!choose_reader()) return false;
    if (!catalog) return true;
    auto session = CatalogSession::on(std::move(catalog), o_, *reader_);
    if (!session) return fail(session.error());
    catalog_ = std::move(*session);
    return true;
  }

  bool fail(const btrfs::Error& e) {
    report_.path_errors.push_back(e.message());
    return false;
  }

  // Once, on the first path's filesystem, before anything is read; the reader and its
  // kernel both come from the run's world.
  bool choose_reader() {
    ReaderKind kind = ReaderKind::Tree;  // with no path, the run says what is missing
    if (!o_.paths.empty()) {
      auto ground = world_.ground(o_.paths.front());
      if (!ground) return fail(ground.error());
      auto choice = btrdedupe::choose_reader(*ground, o_.paths.front(), o_.reader);
      if (!choice) return fail(choice.error());
      kind = choice->kind;
      if (!choice->note.empty()) report_.notes.push_back(choice->note);
    }
    reader_ = &world_.reader(kind);
    run_.emplace(o_, progress_, world_.kernel(kind));
    report_.reader = reader_name(kind);
    return kind == ReaderKind::Tree || take_the_walks_limits();
  }

  // What a walk of the paths cannot do, settled before the run: no backrefs (LOGICAL_INO)
  // to find a remainder's other references, no windows, no subvolume selection; and what
  // it frees is confirmed by walking again (kernel_walked).
  bool take_the_walks_limits() {
    o_.rewrite_remainders = false;
    if (o_.window_files)
      report_.notes.push_back("-B: a walk of the paths has no windows; the tree is read whole");
    if (o_.subvolumes.empty()) return true;
    return fail(btrfs::Error{0, "--subvol, --exclude-subvol and --all-subvols need the tree "
                                "reader (root, on btrfs)"});
  }

  bool select() {
    if (o_.subvolumes.empty()) return true;
    selection_ = select_subvolumes(o_, report_, world_.subvolume_ground());
    return selection_.has_value();
  }

  bool flat() const { return selection_ && o_.subvolumes.flat(); }
  // What the run reads: its paths, or exactly the selected subvolumes.
  ScanScope scope() const {
    ScanScope s{o_.paths, std::nullopt};
    if (flat()) s.subvolumes = selection_->roots;
    return s;
  }

  // nullopt: the hashfile could not tell (a path error).
  std::optional<bool> unchanged_since_last_run() {
    std::vector<uint64_t> will_scan;
    if (selection_)
      for (const auto& root : selection_->roots) will_scan.push_back(root.id);
    auto unchanged = catalog_->unchanged_since_last_run(o_, flat() ? &will_scan : nullptr);
    if (!unchanged) {
      report_.path_errors.push_back(unchanged.error().message());
      return std::nullopt;
    }
    return *unchanged;
  }

  ScanOptions scan_options() const {
    ScanOptions so;
    so.recursive = o_.recursive;
    so.min_file_size = o_.min_file_size;
    so.exclude = o_.exclude;
    so.fold_readonly_aliases = !o_.dedupe_readonly;
    if (selection_) so.excluded_subvolumes = selection_->excluded;
    return so;
  }

  FilesystemReport filesystem_report() const {
    FilesystemReport r;
    r.started = started_at_.sec;
    r.started_at = started_at_;
    return r;
  }

  void add(FilesystemReport r) { report_.filesystems.push_back(std::move(r)); }
  void note_stop() { report_.stopped = o_.stop && o_.stop->load(); }

  // Every batch of `source` into a filesystem's report; `scan_seconds`: its first read.
  void run_source(BatchSource& source, double scan_seconds) {
    FilesystemReport r = filesystem_report();
    r.seconds.scan = scan_seconds;
    run_batches(source, *run_, r);
    add(std::move(r));
  }
  // A filesystem whose run could not start (`roots`: as the report names them).
  void add_failed(std::vector<std::string> roots, double scan_seconds, std::string error) {
    FilesystemReport r = filesystem_report();
    r.roots = std::move(roots);
    r.seconds.scan = scan_seconds;
    r.error = std::move(error);
    add(std::move(r));
  }
  // A reader's error: a path error of the run, which is over.
  bool path_error(const btrfs::Error& e) {
    report_.path_errors.push_back(e.message());
    return true;
  }

  void record_unchanged() {
    FilesystemReport r = filesystem_report();
    r.roots = o_.paths;
    r.catalog.used = r.catalog.unchanged = true;
    if (auto ok = catalog_->record(ScanResult{}, nullptr, run_record(r)); !ok)
      r.error = ok.error().message();
    add(std::move(r));
  }

  // False: the hashfile declined (the trees must be read whole); true: the run is over.
  bool run_incremental() {
    const auto t = Clock::now();
    report_progress(progress_, "scan", 0, 0);
    auto scan = catalog_->incremental_scan(scope(), scan_options_);
    if (!scan) return path_error(scan.error());
    if (!*scan) return false;
    WholeScanSource changed(std::move(**scan), catalog_.get(), reread_changed(*catalog_),
                            o_.io_threads, reader_->checksums());
    run_source(changed, since(t));
    note_stop();
    return true;
  }

  // False: windows cannot be taken here (scan whole); true: the run is over. Without a
  // hashfile a temporary catalog matches each window against the earlier ones.
  bool run_windows() {
    std::unique_ptr<CatalogSession> temporary;
    CatalogSession* session = catalog_.get();
    if (!session) {
      auto opened = CatalogSession::open_temporary(o_, *reader_);
      auto bound = opened ? (*opened)->unchanged_since_last_run(o_) : btrfs::Result<bool>(opened.error());
      if (!bound) return path_error(bound.error());
      temporary = std::move(*opened);
      session = temporary.get();
    }
    const auto t = Clock::now();
    auto base = session->windowed_scan(scope(), scan_options_);
    if (!base) return path_error(base.error());
    if (!*base) return false;
    WindowSource windows(*session, std::move(**base), *run_);
    run_source(windows, since(t));
    note_stop();
    return true;
  }

  // The regular files of the subvolumes a whole read would reach (nested ones included,
  // read-only snapshots by files_held_at_once's rule), as it counts them against its cap;
  // 0 without -r or a selection, whose roots hold only some of their subvolume's files.
  uint64_t estimated_files() const {
    if (!o_.recursive && !flat()) return 0;
    ScanResult places;  // roots and subvolumes only: no file is read
    if (flat()) {
      auto scan = reader_->targeted(scope(), scan_options_, places);
      return scan && *scan ? (*scan)->estimated_files() : 0;
    }
    // A root that is a file is left out (one file: the estimate errs low, as it should);
    // the directories are estimated together, so a subvolume two of them reach counts once.
    std::vector<std::string> directories;
    for (const auto& path : o_.paths) {
      std::error_code error;
      if (std::filesystem::is_directory(path, error)) directories.push_back(path);
    }
    auto scan = reader_->targeted({directories, std::nullopt}, scan_options_, places);
    if (scan && *scan) return (*scan)->estimated_files();
    uint64_t files = 0;  // directories on several filesystems: each by itself
    for (const auto& path : directories) {
      ScanResult one;
      auto single = reader_->targeted({{path}, std::nullopt}, scan_options_, one);
      if (single && *single) files += (*single)->estimated_files();
    }
    return files;
  }

  bool too_many_files(const btrfs::Error& e) const {
    return scan_options_.max_files && e.code == EFBIG;
  }

  // False: more files than scan_options_.max_files (the run is not over).
  bool run_whole() { return flat() ? run_flat() : run_paths(); }

  // Exactly the chosen subvolumes, as one scan. False: more files than the cap.
  bool run_flat() {
    const ScanScope subvolumes = scope();
    // One scan to the report, though a capped attempt may have come first: timed from it.
    if (!flat_scan_started_) {
      flat_scan_started_ = Clock::now();
      report_progress(progress_, "scan", 0, 0);
    }
    SubvolumeGround& ground = world_.subvolume_ground();
    auto scan = ground.scan(subvolumes.paths.front(), *subvolumes.subvolumes, scan_options_);
    if (!scan && too_many_files(scan.error())) return false;
    if (!scan) {
      add_failed(o_.paths, since(*flat_scan_started_), scan.error().message());
    } else {
      WholeScanSource source(std::move(*scan), catalog_.get(),
                             reread_subvolumes(subvolumes, scan_options_, ground), o_.io_threads,
                             reader_->checksums());
      run_source(source, since(*flat_scan_started_));
    }
    note_stop();
    return true;
  }

  // Each path, the paths of one filesystem deduped together. False: more files than the cap.
  bool run_paths() {
    auto scans = scan_paths(o_.paths, scan_options_, *reader_, progress_);
    if (!scans) return false;
    auto& errors = report_.path_errors;
    errors.insert(errors.end(), scans->errors.begin(), scans->errors.end());
    scan_options_.max_files = 0;  // the confirmation scan reads what the first one did
    for (const auto& fsid : scans->filesystems) {
      const double seconds = scans->seconds[fsid];
      auto merged = merge_scans(std::move(scans->scans[fsid]));
      if (!merged) {
        add_failed({}, seconds, merged.error().message());
      } else if (catalog_ && fsid != scans->filesystems.front()) {
        add_failed({}, seconds, "a hashfile serves one filesystem: " + merged->roots[0].path +
                                    " is on another");
      } else {
        WholeScanSource paths(std::move(*merged),
                              fsid == scans->filesystems.front() ? catalog_.get() : nullptr,
                              reread_roots(scan_options_, *reader_), o_.io_threads,
                              reader_->checksums());
        run_source(paths, seconds);
      }
    }
    note_stop();
    return true;
  }

  JobOptions o_;
  ProgressSink* progress_;
  RunWorld& world_;
  std::optional<RunContext> run_;  // of o_ as resolved, once the reader is chosen
  btrfs::Timespec started_at_;
  JobReport report_;
  const RootReader* reader_ = nullptr;  // the world's, once chosen (choose_reader)
  std::unique_ptr<CatalogSession> catalog_;
  std::optional<ResolvedSelection> selection_;
  ScanOptions scan_options_;
  std::optional<Clock::time_point> flat_scan_started_;
};

}  // namespace

JobReport run_job(const JobOptions& options, ProgressSink* progress) {
  return run_job(options, progress, machine_world());
}

JobReport run_job(const JobOptions& options, ProgressSink* progress, RunWorld& world) {
  const auto t = Clock::now();
  Job job(options, progress, world);
  job.run();
  auto report = std::move(job).finish();
  report.seconds = since(t);
  return report;
}

}  // namespace btrdedupe
