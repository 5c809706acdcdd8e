// How a batch takes its catalogued twins given the run's other windows, and what it knows
// of the twins they took: the bounds and roles of twins from earlier windows, the twins
// earlier windows verified and kept (so that this one takes them without reading the tree
// or their sums again), and with a dedupe run's look-ahead, the files of windows still to
// come and those an earlier window took from them. The catalog session asks; the windowed
// source keeps the answers (src/run/window_twins.h).
//
// This base answers for a batch no other window precedes or follows (an incremental or
// side run's): every twin taken, as a Candidate, the batch's rows kept until record();
// nothing kept, nothing ahead, nothing settled, and it keeps nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "src/catalog/catalog.h"
#include "src/fingerprint/fingerprint.h"
#include "src/match/batch_roles.h"
#include "src/read/inode_lookup.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

// The twins a window took from windows still to come -> taken by its whole-file hash.
using AheadTwins = std::unordered_map<FileKey, bool, FileKeyHash>;

class TwinsAcrossWindows {
 public:
  virtual ~TwinsAcrossWindows() = default;

  // Twins taken per whole-file hash and per anchor, of those not ahead.
  virtual size_t twins_per_whole_hash() const { return SIZE_MAX; }
  virtual size_t twins_per_anchor() const { return SIZE_MAX; }
  // Whether a file that took a twin (not ahead) by its whole-file hash looks its anchors up
  // too.
  virtual bool anchors_beside_whole_twins() const { return true; }
  // Whether the batch's own rows go to the catalog at once, for the later windows to look
  // up; otherwise they wait for record().
  virtual bool rows_for_later_windows() const { return false; }
  // The roles of a batch of `files` files, and of a twin not ahead that joined it
  // (`grouped_before`: an earlier window's group held it).
  virtual BatchRoles roles(size_t files) const { return BatchRoles::incremental(files); }
  virtual BatchRole twin_role(bool /*grouped_before*/) const { return BatchRole::Candidate; }

  // A first pass wrote every window's rows before any dedupe (CatalogSession::index_window):
  // those stand, and a window may take twins from the windows still to come.
  virtual bool rows_written_ahead() const { return false; }
  // A file of a window still to come: taken as an ahead twin, or left to its own window.
  virtual bool in_window_ahead(const FileKey&) const { return false; }
  // Taken as an ahead twin by an earlier window already: not taken again.
  virtual bool taken_ahead(const FileKey&) const { return false; }
  // A window's own file an earlier window took by its whole-file hash: it needs no sums.
  virtual bool settled(const FileKey&) const { return false; }
  // After the window's fingerprint: marks in `roles` its ahead twins (AheadTwin) and its
  // own files an earlier window took (Settled). `order`: IncrementalScan::finish's, of
  // which the old indices below `own` are the window's own files.
  virtual void mark_roles(const ScanResult&, const std::vector<uint32_t>& /*order*/,
                          size_t /*own*/, const AheadTwins&, BatchRoles&) {}

  // A twin as an earlier window verified it (what its verification reads: VerifiedTwins).
  virtual bool holds(const FileKey&) const { return false; }
  virtual std::optional<InodeState> kept_state(const FileKey&) const { return std::nullopt; }
  virtual std::optional<FileSumsView> kept_sums(const FileKey&) const { return std::nullopt; }
  // What the window read of a twin (from the tree) and of its own files' sums, to keep for
  // later windows where it stays true for the run.
  virtual void twin_read(const FileKey&, const InodeState&) {}
  virtual void twin_summed(const FileKey&, FileSumsView) {}
  virtual void own_summed(const FileKey&, FileSumsView) {}
};

}  // namespace btrdedupe
