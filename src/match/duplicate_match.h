// Content matching: from per-file sector sums to groups of equal byte ranges.
//
// Pure logic over plain data (ScanResult + FingerprintResult), so it is unit-tested
// without a disk. Matching is on content, never on extent boundaries: two files with the
// same bytes but different extent layouts match. Fingerprints only propose; the kernel's
// byte compare at dedupe time is the proof.
#pragma once

#include <cstdint>
#include <vector>

#include "src/fingerprint/fingerprint.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct MatchOptions {
  // Minimum length of a partial (range) match, a sector multiple (-b). Ranges start at
  // any sector in either file; never under 64 bits of sums (2 sectors with crc32c).
  uint64_t block_size = 128 * 1024;
  bool partial = true;               // look for equal ranges inside non-identical files
};

struct GroupMember {
  uint32_t file = 0;       // index into ScanResult::files
  uint64_t offset = 0;     // byte offset in that file
  uint32_t layout = 0;     // members with the same layout id already share their storage
  uint32_t extents = 0;    // regular extents the range spans (fragmentation)
};

// Bytes [offset, offset + length) of a range.
struct ByteRange {
  uint64_t offset = 0, length = 0;
  bool operator==(const ByteRange&) const = default;
};

// Ranges of equal content, all `length` bytes long. Either whole files (then length is the
// file size, and the range ends at EOF of every member) or ranges starting at a sector
// boundary of each member (a partial last sector only where every member ends at EOF).
struct DuplicateGroup {
  uint64_t length = 0;
  bool whole_file = false;
  // Whole files with holes (or prealloc ranges, which count as holes): the ranges holding
  // data, the same in every member, in file order; only these are deduped (a hole in every
  // member is shared already). Empty: all of [0, length) is data.
  std::vector<ByteRange> data;
  std::vector<GroupMember> members;  // at least two distinct layouts

  uint32_t layouts() const;  // distinct layout ids
  uint64_t data_bytes() const;  // bytes of `data`, or length
  // Logical bytes that would become newly shared if every layout joined the first's.
  uint64_t dedupable_bytes() const;
};

// Files of one size, datasum kind, hole map and data sum, that sum under 64 bits.
struct ShortSumCandidate {
  std::vector<uint32_t> files;
  ByteRange data;  // their data (the rest, if any, is holes)
};

struct MatchResult {
  std::vector<DuplicateGroup> groups;  // largest length first
  uint64_t whole_file_groups = 0;
  uint64_t partial_groups = 0;
  uint64_t already_shared_files = 0;   // identical files that already share all storage
  uint64_t candidate_bytes = 0;        // sum of dedupable_bytes()
  // Whole-file candidates whose data sums hold under 64 bits (one crc32c sector): too
  // little to propose them, not yet groups; their bytes decide (src/fingerprint/short_file_proof.h,
  // then add_whole_file_groups).
  std::vector<ShortSumCandidate> short_sum_candidates;
  uint64_t short_sum_files = 0;  // files in those lists
  // The partial matcher's anchor index (src/match/anchor_index.h): distinct anchors, and bytes.
  uint64_t anchor_index_entries = 0;
  uint64_t anchor_index_bytes = 0;
};

MatchResult find_duplicates(const ScanResult& scan, const FingerprintResult& fp,
                            const MatchOptions& options);

// Adds whole-file groups of files proven equal by other evidence than their sums (each
// list: files of one content), as find_duplicates adds its own: a list whose members all
// share storage is counted in already_shared_files; groups stay largest first.
void add_whole_file_groups(const ScanResult& scan, const FingerprintResult& fp,
                           const std::vector<std::vector<uint32_t>>& same_content,
                           MatchResult& out);

}  // namespace btrdedupe
