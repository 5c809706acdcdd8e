// The program from its arguments to its exit code (btrdedupe(8), EXIT STATUS): options
// parsed, a hashfile command or a run in the world main chose (src/run/run_world.h: the
// machine's; an in-memory btrfs in unit tests), then the report on stdout and errors on
// stderr. The signals are main's: it owns the process's handlers and the flags they set.
#pragma once

#include <atomic>
#include <csignal>

#include "src/run/run_world.h"

namespace btrdedupe {

struct StopSignals {
  std::atomic<bool>& stop;        // no new dedupe round, batch or filesystem starts
  std::atomic<bool>& cycle_stop;  // --follow: ends the cycle under way
  std::atomic<bool>& wake;        // --follow: a cycle now
  const volatile std::sig_atomic_t& signal;  // the signal that stopped the run, 0: none
  // Installed once the run is about to start (nullptr: none, as in tests).
  void (*install_stop_handlers)() = nullptr;
  void (*install_wake_handler)() = nullptr;
};

int run_command_line(int argc, char** argv, RunWorld& world, StopSignals& signals);

}  // namespace btrdedupe
