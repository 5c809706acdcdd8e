// A maintainer's check of the fingerprints against the data: for every scanned file, each
// sector's sum as fingerprint() produced it is compared with the filesystem's checksum
// recomputed from the file's bytes (src/fingerprint/sector_checksum.h). It reads every file's data,
// so it is for tests and tools/check-sums, never for a dedupe run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/fingerprint/fingerprint.h"
#include "src/read/tree_scan.h"

namespace btrdedupe {

struct SumMismatch {
  uint32_t file = 0;        // index into ScanResult::files
  uint64_t offset = 0;      // byte offset of the sector in the file
  std::string fingerprint;  // hex of the fingerprint's sum, "unknown" or "none"
  std::string data;         // hex of the sum recomputed from the data
};

struct SumCheck {
  uint64_t files = 0;              // regular files compared
  uint64_t sectors_checked = 0;    // data sectors whose recomputed sum was compared
  uint64_t mismatches = 0;         // of those, sums that differ (the first few in `first`)
  uint64_t sectors_without_data = 0;  // holes, prealloc, inline: no sum exists, skipped
  uint64_t sectors_nodatasum = 0;     // files without data checksums: skipped
  uint64_t sectors_unknown = 0;    // data sectors the fingerprint left unknown (read errors)
  uint64_t read_errors = 0;        // files that could not be read to the end
  std::vector<SumMismatch> first;  // the first mismatches, in file order
  std::vector<std::string> errors; // the first read errors, "path: reason"
  bool ok() const { return mismatches == 0 && read_errors == 0; }
};

// Compares fp (fingerprint(scan)) with sums recomputed from each file's data. A known sum
// where the file has no regular extent (a hole read as zeros) is a mismatch too: the
// matcher would compare it. keep: how many mismatches and errors to list.
SumCheck check_sums(const ScanResult& scan, const FingerprintResult& fp, size_t keep = 20);

// "files F, sectors checked S, mismatches M (...)": the one-line summary.
std::string summary_line(const SumCheck& check);

}  // namespace btrdedupe
