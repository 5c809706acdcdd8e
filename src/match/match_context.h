// The matcher's view of a scan: sizes, sums and physical layout of each file, and the
// rules for when equal sums count as evidence. Internal to the matcher
// (src/match/duplicate_match.cpp, src/match/run_match.cpp).
#pragma once

#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "src/fingerprint/content_hash.h"
#include "src/match/duplicate_match.h"
#include "src/read/file_extent_index.h"
#include "src/fingerprint/sector_checksum.h"

namespace btrdedupe {

// (disk_bytenr, offset inside the extent, length): where a piece of a range lives.
using PhysicalPiece = std::tuple<uint64_t, uint64_t, uint64_t>;

class MatchContext {
 public:
  MatchContext(const ScanResult& scan, const FingerprintResult& fp)
      : scan_(scan), fp_(fp), ss_(scan.fs.sectorsize), cs_(scan.fs.csum_size), index_(scan),
        residue_possible_(scan.fs.csum_type == btrfs::CsumType::Crc32c) {}

  uint32_t sectorsize() const { return ss_; }
  uint64_t size(uint32_t f) const { return scan_.files[f].size; }
  bool nodatasum(uint32_t f) const { return scan_.files[f].nodatasum(); }
  uint64_t sectors(uint32_t f) const { return fp_.files[f].sectors(); }
  FileSumsView sums(uint32_t f) const { return fp_.files[f]; }
  uint16_t csum_size() const { return cs_; }
  bool residue_possible() const { return residue_possible_; }

  // f's known sums hold at least 64 bits (two crc32c sectors, one of the longer sums).
  bool sums_hold_64_bits(uint32_t f) const {
    const FileSumsView v = fp_.files[f];
    uint64_t bytes = 0;
    for (uint64_t s = 0; s < v.sectors() && bytes < 8; ++s) bytes += v.known[s] ? cs_ : 0;
    return bytes >= 8;
  }

  // Sector s of f may extend a run: its sum is known and proves something.
  bool usable(uint32_t f, uint64_t s) const {
    const FileSumsView v = fp_.files[f];
    return s < v.sectors() && v.known[s] &&
           !(residue_possible_ && is_crc32c_residue({v.sums.data() + s * cs_, cs_}));
  }
  // Sector fs of f and sector gs of g have equal, usable sums.
  bool same_usable(uint32_t f, uint64_t fs, uint32_t g, uint64_t gs) const {
    return usable(f, fs) && usable(g, gs) &&
           std::memcmp(fp_.files[f].sums.data() + fs * cs_, fp_.files[g].sums.data() + gs * cs_,
                       cs_) == 0;
  }

  // Sums of sectors [first, first+count) of file f, or nullptr if any is unknown.
  const uint8_t* sector_sums(uint32_t f, uint64_t first, uint64_t count) const {
    const FileSumsView s = fp_.files[f];
    if (first + count > s.known.size()) return nullptr;
    for (uint64_t i = first; i < first + count; ++i)
      if (!s.known[i]) return nullptr;
    return s.sums.data() + first * cs_;
  }

  bool same_sectors(uint32_t f, uint64_t fs, uint32_t g, uint64_t gs, uint64_t count) const {
    const uint8_t* a = sector_sums(f, fs, count);
    const uint8_t* b = sector_sums(g, gs, count);
    return a && b && std::memcmp(a, b, count * cs_) == 0;
  }

  // Equal sums as evidence of equal content: none of them may be the crc32c residue
  // (sector_checksum.h), which sectors of different bytes share by construction (ext4
  // backup superblocks of different groups). Equal sums are weak on both sides or neither.
  bool proven_same(uint32_t f, uint64_t fs, uint32_t g, uint64_t gs, uint64_t count) const {
    return same_sectors(f, fs, g, gs, count) && !has_residue(f, fs, count);
  }

  bool has_residue(uint32_t f, uint64_t first, uint64_t count) const {
    if (!residue_possible_) return false;
    const uint8_t* sums = fp_.files[f].sums.data();
    for (uint64_t i = first; i < first + count; ++i)
      if (is_crc32c_residue({sums + i * cs_, cs_})) return true;
    return false;
  }

  uint64_t hash_sectors(uint32_t f, uint64_t first, uint64_t count, bool* ok) const {
    const auto h = sectors_hash(fp_.files[f], first, count, cs_, nodatasum(f));
    *ok = h.has_value();
    return h.value_or(0);
  }

  std::optional<uint64_t> whole_hash(uint32_t f) const {
    return whole_file_hash(scan_, index_, fp_.files[f], f);
  }
  std::vector<SectorRun> data_runs(uint32_t f) const { return index_.data_runs(f); }
  std::span<const uint32_t> extents_of(uint32_t f) const { return index_.of(f); }

  // Same size, datasum kind, hole map and data sums: whole-file duplicates. `runs` are f's.
  bool same_file(uint32_t f, const std::vector<SectorRun>& runs, uint32_t g) const {
    if (size(f) != size(g) || nodatasum(f) != nodatasum(g) || data_runs(g) != runs) return false;
    for (const SectorRun& r : runs)
      if (!same_sectors(f, r.first, g, r.first, r.count)) return false;
    return true;
  }

  // The data ranges of a whole file with these runs; empty when it has no hole.
  std::vector<ByteRange> data_ranges(uint32_t f, const std::vector<SectorRun>& runs) const {
    if (runs.size() == 1 && runs[0] == SectorRun{0, sectors(f)}) return {};
    std::vector<ByteRange> out;
    for (const SectorRun& r : runs) {
      const uint64_t from = r.first * ss_, to = std::min(size(f), (r.first + r.count) * ss_);
      out.push_back({from, to - from});
    }
    return out;
  }

  std::vector<PhysicalPiece> physical(uint32_t f, uint64_t off, uint64_t len,
                                      uint32_t* extent_count) const {
    std::vector<PhysicalPiece> pieces;
    const uint64_t end = off + len;
    *extent_count = 0;
    for (uint32_t idx : index_.of(f)) {
      const FileExtent& e = scan_.extents[idx];
      const uint64_t e_end = e.file_offset + e.length;
      if (e_end <= off || e.file_offset >= end) continue;
      ++*extent_count;
      const uint64_t from = std::max(off, e.file_offset), to = std::min(end, e_end);
      const uint64_t in_extent = e.extent_offset + (from - e.file_offset);
      if (!pieces.empty()) {
        auto& [b, o, l] = pieces.back();
        if (b == e.disk_bytenr && o + l == in_extent) {
          l += to - from;
          continue;
        }
      }
      pieces.emplace_back(e.disk_bytenr, in_extent, to - from);
    }
    return pieces;
  }

  // Assigns layout ids: members whose ranges name the same physical bytes share one.
  void assign_layouts(DuplicateGroup& g) const {
    std::map<std::vector<PhysicalPiece>, uint32_t> ids;
    for (auto& m : g.members) {
      auto key = physical(m.file, m.offset, g.length, &m.extents);
      m.layout = ids.emplace(std::move(key), static_cast<uint32_t>(ids.size())).first->second;
    }
  }

 private:
  const ScanResult& scan_;
  const FingerprintResult& fp_;
  uint32_t ss_;
  uint16_t cs_;
  FileExtentIndex index_;
  bool residue_possible_;
};

}  // namespace btrdedupe
