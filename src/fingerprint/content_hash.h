// Content hashes of files and blocks, computed from their sector checksums. The matcher
// groups by them and the catalog stores them, so both must compute them the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "src/read/file_extent_index.h"
#include "src/fingerprint/fingerprint.h"

namespace btrdedupe {

// Hash of sectors [first, first+count) of `sums`, seeded by the datasum kind (nodatasum
// files never match datasum files). nullopt when any of those sectors is unknown.
std::optional<uint64_t> sectors_hash(FileSumsView sums, uint64_t first, uint64_t count,
                                     uint16_t csum_size, bool nodatasum);

// Whole-file hash. A file's content is its sequence of sectors, data or hole: the hash
// covers where its data lies (`data`, FileExtentIndex::data_runs; the rest is holes and
// prealloc) and the sums of those sectors, which must all be known, mixed with the size
// (equal sums, different tails). nullopt without data or with an unknown data sector.
// A file without holes hashes its sums alone, as the hashfile's format 2 always did, so
// its rows keep their meaning; files with holes had no hash before (never matched whole).
std::optional<uint64_t> whole_file_hash(FileSumsView sums, std::span<const SectorRun> data,
                                        uint64_t size, uint16_t csum_size, bool nodatasum);

// The same for file `file` of `scan`, its data runs from `index`. A file with an inline
// extent has no hole map (what its extents leave uncovered is not only holes): only one
// whose regular extents cover every sector gets a hash.
std::optional<uint64_t> whole_file_hash(const ScanResult& scan, const FileExtentIndex& index,
                                        FileSumsView sums, uint32_t file);

// What the catalog indexes of a file for partial matches: the distinct hashes of the
// anchors the matcher selects for runs of at least min_run_bytes (src/fingerprint/sum_anchors.h), so
// that a file sharing such a run with it at any sector-aligned offset shares one of them.
// Empty for a file shorter than that. residue_breaks: the filesystem sums with crc32c.
std::vector<uint64_t> catalog_anchors(FileSumsView sums, uint64_t size, uint32_t sectorsize,
                                      uint16_t csum_size, uint64_t min_run_bytes,
                                      bool nodatasum, bool residue_breaks);

}  // namespace btrdedupe
