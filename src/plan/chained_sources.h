// Sources that are themselves destinations. The matcher pairs each copy with the copy it
// met first, and target choice works group by group, so a range can be the source of one
// group's rounds and a destination of another's (an image's file that an earlier image
// also holds, matched again by a third). Deduped as planned, the first group's
// destinations would take references to the range's old extent, which the second group
// was to free: the plan counted it freed, the disk kept it.
//
// So each source range that other rounds' destinations cover is taken from what those
// rounds share it with instead, followed through chains of them: every byte a round's
// destinations get then lies on an extent the plan keeps. Pure logic on the plan.
#pragma once

#include <cstdint>

#include "src/plan/dedupe_plan.h"
#include "src/read/file_extent_index.h"

namespace btrdedupe {

struct ChainedSources {
  uint64_t rounds_changed = 0;   // rounds whose source (or part of it) was taken further back
  uint64_t bytes_moved = 0;      // source bytes so taken
};

// Rewrites `plan`'s rounds so that no source range lies inside a destination range of
// another round (but where the chain loops back on itself, when it stops). A round whose
// source is covered in part is cut where the cover starts and ends; a destination that
// would then overlap its new source in the same file is left out. Rounds keep their group;
// disk_order is taken again from `index`; planned_bytes follows. Call before sorting.
ChainedSources take_sources_past_destinations(DedupePlan& plan, const FileExtentIndex& index);

}  // namespace btrdedupe
