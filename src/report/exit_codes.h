// The program's exit codes (docs/btrdedupe.8, EXIT STATUS): what a run's report and a
// follower end with, and what the command line adds for usage errors.
#pragma once

namespace btrdedupe {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // a path, a filesystem or a read failed
inline constexpr int kExitUsage = 2;     // bad command line
inline constexpr int kExitSkipped = 3;   // finished, but some ranges were left as they were
inline constexpr int kExitTimeUp = 4;    // stopped at --max-runtime; the rest is left for later
// After a clean stop on a signal: 128 + the signal (130 SIGINT, 143 SIGTERM); a follower
// stopped on one exits kExitOk.

}  // namespace btrdedupe
