#include "src/fingerprint/content_hash.h"

#include <xxhash.h>

#include <algorithm>

#include "src/fingerprint/sum_anchors.h"

namespace btrdedupe {

std::optional<uint64_t> sectors_hash(FileSumsView sums, uint64_t first, uint64_t count,
                                     uint16_t csum_size, bool nodatasum) {
  if (first + count > sums.known.size()) return std::nullopt;
  for (uint64_t i = first; i < first + count; ++i)
    if (!sums.known[i]) return std::nullopt;
  return XXH3_64bits_withSeed(sums.sums.data() + first * csum_size, count * csum_size,
                              nodatasum ? 1 : 0);
}

namespace {

constexpr uint64_t kSizeMix = 0x9E3779B97F4A7C15ULL;

bool all_known(FileSumsView sums, SectorRun run) {
  if (run.first + run.count > sums.known.size()) return false;
  for (uint64_t i = run.first; i < run.first + run.count; ++i)
    if (!sums.known[i]) return false;
  return true;
}

// A file with holes: each data run's place (first sector, count, little-endian) before
// its sums, so the same data at other places hashes apart.
uint64_t sparse_hash(FileSumsView sums, std::span<const SectorRun> data, uint16_t csum_size,
                     bool nodatasum) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset_withSeed(state, nodatasum ? 1 : 0);
  for (const SectorRun& run : data) {
    uint8_t place[16];
    for (int i = 0; i < 8; ++i) {
      place[i] = static_cast<uint8_t>(run.first >> (8 * i));
      place[8 + i] = static_cast<uint8_t>(run.count >> (8 * i));
    }
    XXH3_64bits_update(state, place, sizeof place);
    XXH3_64bits_update(state, sums.sums.data() + run.first * csum_size, run.count * csum_size);
  }
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

}  // namespace

std::optional<uint64_t> whole_file_hash(FileSumsView sums, std::span<const SectorRun> data,
                                        uint64_t size, uint16_t csum_size, bool nodatasum) {
  if (size == 0 || sums.known.empty() || data.empty()) return std::nullopt;
  for (const SectorRun& run : data)
    if (!all_known(sums, run)) return std::nullopt;
  if (data.size() == 1 && data[0] == SectorRun{0, sums.known.size()}) {  // no hole
    auto h = sectors_hash(sums, 0, sums.known.size(), csum_size, nodatasum);
    return *h ^ (size * kSizeMix);
  }
  return sparse_hash(sums, data, csum_size, nodatasum) ^ (size * kSizeMix);
}

std::optional<uint64_t> whole_file_hash(const ScanResult& scan, const FileExtentIndex& index,
                                        FileSumsView sums, uint32_t file) {
  const ScannedFile& f = scan.files[file];
  const auto data = index.data_runs(file);
  const bool holes = !(data.size() == 1 && data[0] == SectorRun{0, sums.known.size()});
  if (f.inline_data && holes) return std::nullopt;
  return whole_file_hash(sums, data, f.size, scan.fs.csum_size, f.nodatasum());
}

std::vector<uint64_t> catalog_anchors(FileSumsView sums, uint64_t size, uint32_t sectorsize,
                                      uint16_t csum_size, uint64_t min_run_bytes,
                                      bool nodatasum, bool residue_breaks) {
  std::vector<uint64_t> out;
  if (sectorsize == 0 || size < min_run_bytes) return out;
  const AnchorShape shape = anchor_shape(min_run_bytes, sectorsize, csum_size);
  for_each_anchor(sums, shape, {csum_size, nodatasum, residue_breaks},
                  [&](uint64_t, uint64_t hash) { out.push_back(hash); });
  // A constant run (written zeros) selects every position, all of one hash: one row.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace btrdedupe
