// Giving freed heap memory back to the system between the phases of a run.
//
// Each phase frees what the next does not need (the scan's inode table, the fingerprints,
// the duplicate groups, the plan), but glibc keeps freed small blocks in its heap: the
// process's resident size would stay at the high-water mark of the largest phase plus
// what the next phase cannot fit into the holes. Trimming after a phase hands the free
// pages back, so peak RSS is the largest phase, not the sum of their leftovers.
#pragma once

namespace btrdedupe {

// Limits malloc to a few arenas: each worker thread would otherwise get its own, whose
// free pages add to the resident size. Call once, before any thread starts.
void limit_heap_arenas();

// Returns the heap's free pages to the system.
void release_free_heap();

// Frees a container's storage. `v = {}` does not: for a vector it picks the
// initializer-list assignment, which empties it and keeps its capacity.
template <class Container>
void free_storage(Container& c) {
  Container().swap(c);
}

}  // namespace btrdedupe
