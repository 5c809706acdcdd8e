// What each file of a batch is there for. A batch is what a run matches and dedupes at
// once: a whole run's scan, an incremental run's changed files with their catalogued twins,
// or one window of a run read in windows. Each file has exactly one role, and the figures,
// the group count and the plan ask the role, not a set of per-file flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace btrdedupe {

enum class BatchRole : uint8_t {
  // Read for this batch: counted in its figures, matched, a source or a destination.
  Own,
  // A catalogued twin of an own file (an incremental or side run), verified against the
  // tree before it joined: counted and deduped as the batch's own.
  Candidate,
  // A file of a window still to come, taken as a twin (the look-ahead of a windowed dedupe
  // run): counted here as this window's own; its own window leaves it out (Settled).
  AheadTwin,
  // An own file an earlier window took as its ahead twin: that window counted and deduped
  // it, so this one leaves it out of its figures.
  Settled,
  // A file of a window passed, joined as a source for this window's files: that window
  // counted and planned it, so it is never a destination here (BatchRoles::source_only).
  EarlierTwin,
  // An earlier twin whose whole-file group an earlier window held: a group holding it
  // grows that group and is not counted again.
  EarlierGroupedTwin,
};

// The roles of a batch's files, by file index. Empty: every file is the batch's own (a
// whole run), and in_windows() is false.
class BatchRoles {
 public:
  BatchRoles() = default;
  // A window of `files` files, all its own until set().
  static BatchRoles window(size_t files);
  // An incremental run's batch of `files` files, all its own until set().
  static BatchRoles incremental(size_t files);

  void set(uint32_t file, BatchRole role) { roles_[file] = role; }
  BatchRole of(uint32_t file) const {
    return file < roles_.size() ? roles_[file] : BatchRole::Own;
  }
  size_t size() const { return roles_.size(); }
  // The batch is a window of a run read in windows: its groups of earlier twins alone were
  // counted in their own window.
  bool in_windows() const { return in_windows_; }

  // An earlier window counted this file: its extents and data are not this batch's.
  bool counted_before(uint32_t file) const {
    const BatchRole r = of(file);
    return r == BatchRole::EarlierTwin || r == BatchRole::EarlierGroupedTwin;
  }
  // Another window counts this file: this batch's figures leave it out entirely.
  bool left_out(uint32_t file) const { return of(file) == BatchRole::Settled; }
  bool grouped_before(uint32_t file) const { return of(file) == BatchRole::EarlierGroupedTwin; }
  // An earlier window's file is a source for this window's files, never their destination:
  // that window planned it already (against its other copies, and any refusal was met
  // there). Planned again, a report run would count its bytes once per later window that
  // holds a copy, and a dedupe run would move data an earlier window settled.
  bool source_only(uint32_t file) const { return counted_before(file); }

 private:
  std::vector<BatchRole> roles_;
  bool in_windows_ = false;
};

}  // namespace btrdedupe
