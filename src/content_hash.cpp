#include "src/content_hash.h"

#include <xxhash.h>

namespace btrdedupe {

std::optional<uint64_t> sectors_hash(FileSumsView sums, uint64_t first, uint64_t count,
                                     uint16_t csum_size, bool nodatasum) {
  if (first + count > sums.known.size()) return std::nullopt;
  for (uint64_t i = first; i < first + count; ++i)
    if (!sums.known[i]) return std::nullopt;
  return XXH3_64bits_withSeed(sums.sums.data() + first * csum_size, count * csum_size,
                              nodatasum ? 1 : 0);
}

std::optional<uint64_t> whole_file_hash(FileSumsView sums, uint64_t size, uint16_t csum_size,
                                        bool nodatasum) {
  if (size == 0 || sums.known.empty()) return std::nullopt;
  auto h = sectors_hash(sums, 0, sums.known.size(), csum_size, nodatasum);
  if (!h) return std::nullopt;
  return *h ^ (size * 0x9E3779B97F4A7C15ULL);
}

std::vector<uint64_t> block_hashes(FileSumsView sums, uint64_t size, uint32_t sectorsize,
                                   uint16_t csum_size, uint64_t block_size, bool nodatasum) {
  std::vector<uint64_t> out;
  if (sectorsize == 0 || block_size < sectorsize) return out;
  const uint64_t spb = block_size / sectorsize;
  for (uint64_t b = 0; b < size / block_size; ++b) {
    const auto h = sectors_hash(sums, b * spb, spb, csum_size, nodatasum);
    out.push_back(h ? (*h == 0 ? 1 : *h) : 0);  // 0 means "no hash"
  }
  return out;
}

}  // namespace btrdedupe
