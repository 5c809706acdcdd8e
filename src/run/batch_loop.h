// The one loop every run goes through: batches from a source (src/run/batch_source.h), each
// fingerprinted, matched, planned, deduped and confirmed, their figures summed into the
// filesystem's report, then the run recorded.
#pragma once

#include "src/run/batch_source.h"
#include "src/run/run_context.h"

namespace btrdedupe {

// Runs every batch of `source` into `r` (whose started, started_at and seconds.scan the
// caller set). Sharing and per-subvolume figures add up each batch's own files, leaving
// out the twins another batch counts (BatchRoles). A failure ends the batches: what they
// did stands, and the run is recorded only when none failed.
void run_batches(BatchSource& source, const RunContext& run, FilesystemReport& r);

}  // namespace btrdedupe
