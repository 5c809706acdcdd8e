// How a run read in windows takes its twins, and what it carries from one window to the
// next about them (TwinsAcrossWindows), held by its WindowSource for the session to ask:
// - a window takes one earlier twin per whole-file hash and two per anchor, and its rows
//   go to the catalog at once, for the later windows to look up;
// - the twins verified by earlier windows, with their sums (VerifiedTwins), and in a run
//   that changes no file, each window's own files as read (keep_files_as_read);
// - with a dedupe run's look-ahead (look_ahead, after the first pass), the files earlier
//   windows took as ahead twins, which their own windows find settled.
// A file is kept only once its window has passed (IncrementalScan::window_passed): from
// then on it is a source only, which this run does not change.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>

#include "src/catalog/twins_across_windows.h"
#include "src/run/verified_twins.h"
#include "src/read/incremental_scan.h"
#include "src/read/inode_bitset.h"

namespace btrdedupe {

// What a windowed run keeps of the twins its windows verified (VerifiedTwins): ~96 bytes a
// file and ~5 bytes a sector of its sums, so the first copy's 50,883 files with data of
// linux-source-6.1 take 4.9 MB and their sums 1.7 MB. Of it, a report may fill this much
// with its windows' files as read (keep_files_as_read): that first copy.
inline constexpr size_t kVerifiedTwinBytes = 12 << 20;
inline constexpr size_t kKeptAsReadBytes = 7 << 20;

// Earlier windows' files taken as twins of a window's file: per whole-file hash one, the
// source of the rest (this run wrote the rows, so it is gone only if deleted meanwhile);
// per anchor two, as files sharing an anchor may share no more than that. A window needs
// a source for its files, not every earlier twin: those were matched with each other in
// their own windows. The bound keeps a window's memory flat however many copies came
// before.
inline constexpr size_t kWindowTwinsPerWholeHash = 1;
inline constexpr size_t kWindowTwinsPerAnchor = 2;

class WindowTwins final : public TwinsAcrossWindows {
 public:
  // `reader`: the session's windows (CatalogSession::window_reader), which must outlive this.
  explicit WindowTwins(const IncrementalScan& reader) : reader_(reader) {}

  // Before the first window: the budget for kept twins (0: every twin is read from the tree
  // in each window that takes it), and how much of it keep_files_as_read() may fill (at
  // most the budget).
  void keep_verified_twins(size_t budget_bytes, std::optional<size_t> as_read_bytes = {}) {
    verified_ = VerifiedTwins(budget_bytes);
    as_read_bytes_ = std::min(budget_bytes, as_read_bytes.value_or(kKeptAsReadBytes));
  }
  // For a run that changes no file (a report), before the first window: each window's
  // files are kept as read (while under their share of the budget), with their sums, so
  // that a later window takes them as twins without reading their trees and sums again.
  // They are as the tree showed them this run, as a whole run's files are. The rest of the
  // budget stays for twins verified later, which a tree whose copies lie far apart needs.
  void keep_files_as_read() { keep_as_read_ = true; }
  // What CatalogSession::next_window is to call with each file read; nullptr: nothing.
  IncrementalScan::FileAdded as_read();
  // After the first pass (CatalogSession::rewind_windows): the windows look ahead.
  void look_ahead() { look_ahead_ = true; }
  size_t verified_twins_kept() const { return verified_.files(); }

  size_t twins_per_whole_hash() const override { return kWindowTwinsPerWholeHash; }
  size_t twins_per_anchor() const override { return kWindowTwinsPerAnchor; }
  // A window's file with an earlier whole-file twin is in a whole-file group with it, and
  // the matcher takes no partial match into such a file (src/match/run_match.h), nor into
  // an earlier window's file (BatchRoles::source_only): its anchors would only bring more
  // earlier copies of itself.
  bool anchors_beside_whole_twins() const override { return false; }
  bool rows_for_later_windows() const override { return true; }
  BatchRoles roles(size_t files) const override { return BatchRoles::window(files); }
  // A window takes one twin per whole-file hash: a group of an earlier window held it, and
  // this window's group grows that group and is not counted again.
  BatchRole twin_role(bool grouped_before) const override {
    return grouped_before ? BatchRole::EarlierGroupedTwin : BatchRole::EarlierTwin;
  }

  bool rows_written_ahead() const override { return look_ahead_; }
  bool in_window_ahead(const FileKey& key) const override;
  bool taken_ahead(const FileKey& key) const override {
    return taken_ahead_.contains(key.subvolume, key.inode);
  }
  bool settled(const FileKey& key) const override {
    return settled_whole_.contains(key.subvolume, key.inode);
  }
  void mark_roles(const ScanResult& scan, const std::vector<uint32_t>& order, size_t own,
                  const AheadTwins& ahead, BatchRoles& roles) override;

  bool holds(const FileKey& key) const override { return verified_.contains(key); }
  std::optional<InodeState> kept_state(const FileKey& key) const override {
    return verified_.find(key);
  }
  std::optional<FileSumsView> kept_sums(const FileKey& key) const override {
    return verified_.find_sums(key);
  }
  void twin_read(const FileKey& key, const InodeState& state) override;
  void twin_summed(const FileKey& key, FileSumsView sums) override;
  void own_summed(const FileKey& key, FileSumsView sums) override;

 private:
  bool passed(const FileKey& key) const { return reader_.window_passed(key.subvolume, key.inode); }

  const IncrementalScan& reader_;
  VerifiedTwins verified_{kVerifiedTwinBytes};
  bool keep_as_read_ = false;
  size_t as_read_bytes_ = kKeptAsReadBytes;
  bool look_ahead_ = false;    // a first pass wrote the rows of every window
  InodeBitset taken_ahead_;    // files an earlier window took as ahead twins
  InodeBitset settled_whole_;  // of those, taken by their whole-file hash
};

}  // namespace btrdedupe
