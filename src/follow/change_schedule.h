// When a follower starts its next cycle. It polls the filesystem's generation, which moves
// as soon as a transaction starts (any write, before it is committed): a change costs one
// ioctl to notice, and no tree is read while nothing changes. Writes that join a running
// transaction leave the generation alone, but not the space reserved for writes in flight:
// a cycle waits until both have stood still for `settle` seconds (the copy has landed), or
// until a change has waited `max_wait` seconds (a filesystem that is never quiet), and
// starts early on SIGHUP. Pure rules over the times and marks given: tested without a
// filesystem.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace btrdedupe {

struct FollowTiming {
  double settle = 15;    // seconds a change must stand still before a cycle reads it
  double poll = 5;       // seconds between two looks at the generation
  double max_wait = 300; // the longest a change waits for the filesystem to be quiet
};

// What a look at the filesystem sees.
struct ChangeMarks {
  uint64_t generation = 0;  // the latest transaction started (FS_INFO)
  uint64_t reserved = 0;    // space reserved for writes in flight (btrfs/space_reservations.h)
  bool operator==(const ChangeMarks&) const = default;
};

struct NextStep {
  bool run_cycle = false;
  double look_at = 0;       // otherwise: when to look again (clock seconds)
  std::string waiting_for;  // what it waits for, in words (--status)
};

class ChangeSchedule {
 public:
  explicit ChangeSchedule(FollowTiming timing) : timing_(timing) {}

  // A look at the filesystem, at `now`.
  void observe(double now, const ChangeMarks& marks);
  // A cycle began with the generation `at_start` and ended at `now` with `at_end` (its own
  // dedupe and hashfile committed). `read_changes`: it found files to read: whatever landed
  // while it ran is looked at by the next cycle, once settled; otherwise the cycle saw
  // everything up to its end. `settles_at`: files it left to settle, when the last of them
  // does (clock seconds).
  void cycle_done(double now, uint64_t at_start, const ChangeMarks& at_end, bool read_changes,
                  std::optional<double> settles_at);
  // A cycle that could not run (another run held the hashfile) ended at `now`: what was
  // pending still is, and is tried again once the filesystem stood still for `settle`.
  void cycle_failed(double now, const ChangeMarks& at_end);
  // The follower wrote to the filesystem itself (its status beside a hashfile that lies on
  // it) and committed; `after` is a look right after. Not a change, unless one was pending.
  void own_write(const ChangeMarks& after);
  // SIGHUP: the next step is a cycle.
  void wake() { woken_ = true; }
  NextStep next(double now) const;
  // When the latest change was seen (clock seconds); nullopt before any.
  std::optional<double> last_change() const { return last_change_; }

 private:
  bool pending() const { return seen_.generation != done_; }

  FollowTiming timing_;
  uint64_t done_ = 0;             // the generation a cycle saw up to
  ChangeMarks seen_;              // the latest look
  double moved_at_ = 0;           // when seen_ was first seen
  double pending_since_ = 0;      // when the oldest change not yet read was first seen
  std::optional<double> last_change_;
  std::optional<double> settles_at_;
  bool woken_ = false;
};

}  // namespace btrdedupe
