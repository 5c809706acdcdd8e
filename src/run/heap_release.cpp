#include "src/run/heap_release.h"

#include <malloc.h>

namespace btrdedupe {

void limit_heap_arenas() {
  // Two: the job's thread and one shared by the I/O workers, which allocate little.
  ::mallopt(M_ARENA_MAX, 2);
}

void release_free_heap() { ::malloc_trim(0); }

}  // namespace btrdedupe
