#include "src/fingerprint/short_file_proof.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// XXH3-64 of bytes [data.offset, data.offset + data.length) of `file`, if read whole.
std::optional<uint64_t> data_hash(const ScanResult& scan, uint32_t file, ByteRange data) {
  auto fd = open_scanned_file(scan, scan.files[file], true);
  if (!fd) return std::nullopt;
  std::vector<uint8_t> buf(data.length);
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::pread(fd->get(), buf.data() + done, buf.size() - done,
                              static_cast<off_t>(data.offset + done));
    if (n <= 0) return std::nullopt;
    done += static_cast<size_t>(n);
  }
  return XXH3_64bits(buf.data(), buf.size());
}

}  // namespace

void ShortFileProofCounts::add(const ShortFileProofCounts& more) {
  files_read += more.files_read;
  bytes_read += more.bytes_read;
  files_known += more.files_known;
  files_unreadable += more.files_unreadable;
}

ShortFileProof prove_short_files(const ScanResult& scan, const FingerprintResult& fp,
                                 MatchResult& matches, unsigned threads) {
  const auto& candidates = matches.short_sum_candidates;
  // Each file's hash, by candidate; read by `threads` workers: a cold tree's small files
  // cost a path walk and a random read each, which the device serves concurrently.
  std::vector<std::vector<std::optional<uint64_t>>> hashes(candidates.size());
  std::atomic<size_t> next_candidate{0};
  auto work = [&] {
    for (size_t c; (c = next_candidate++) < candidates.size();)
      for (uint32_t f : candidates[c].files) {
        const auto known = fp.short_hashes.find(f);
        hashes[c].push_back(known != fp.short_hashes.end()
                                ? std::optional<uint64_t>(known->second)
                                : data_hash(scan, f, candidates[c].data));
      }
  };
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 1; t < std::max(1u, threads); ++t) workers.emplace_back(work);
    work();
  }
  ShortFileProof proof;
  std::vector<std::vector<uint32_t>> proven;
  for (size_t c = 0; c < candidates.size(); ++c) {
    std::vector<std::pair<uint64_t, uint32_t>> by_hash;
    for (size_t i = 0; i < candidates[c].files.size(); ++i) {
      const auto& h = hashes[c][i];
      const uint32_t f = candidates[c].files[i];
      if (!h) {
        ++proof.counts.files_unreadable;
        continue;
      }
      if (fp.short_hashes.count(f)) {
        ++proof.counts.files_known;
      } else {
        ++proof.counts.files_read;
        proof.counts.bytes_read += candidates[c].data.length;
        proof.hashes_read.emplace_back(f, *h);
      }
      by_hash.emplace_back(*h, f);
    }
    std::sort(by_hash.begin(), by_hash.end());
    for (size_t run = 0, next = 0; run < by_hash.size(); run = next) {
      while (next < by_hash.size() && by_hash[next].first == by_hash[run].first) ++next;
      if (next - run < 2) continue;
      std::vector<uint32_t>& same = proven.emplace_back();
      for (size_t i = run; i < next; ++i) same.push_back(by_hash[i].second);
      std::sort(same.begin(), same.end());  // scan order: the first scanned is the source
    }
  }
  matches.short_sum_candidates.clear();
  add_whole_file_groups(scan, fp, proven, matches);
  return proof;
}

}  // namespace btrdedupe
