#include "src/duplicate_match.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "src/content_hash.h"
#include "src/file_extent_index.h"
#include "src/sector_checksum.h"

namespace btrdedupe {
namespace {

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

// Whole-file duplicates: grouped by (size, datasum, hole map, data sums), every data sector
// known. Holes are content: the same data at other places is not the same file.
void match_whole_files(const MatchContext& ctx, uint32_t nfiles, MatchResult& out,
                       std::vector<bool>& in_whole_group) {
  // (hash, file) sorted, not a map of vectors: 16 bytes per file instead of a node and a
  // vector each (~10 MB for 100k files, at the run's memory peak).
  std::vector<std::pair<uint64_t, uint32_t>> by_hash;
  for (uint32_t f = 0; f < nfiles; ++f)
    if (const auto h = ctx.whole_hash(f)) by_hash.emplace_back(*h, f);
  std::sort(by_hash.begin(), by_hash.end());
  std::vector<uint32_t> files;
  for (size_t run = 0, next = 0; run < by_hash.size(); run = next) {
    while (next < by_hash.size() && by_hash[next].first == by_hash[run].first) ++next;
    if (next - run < 2) continue;
    files.clear();
    for (size_t i = run; i < next; ++i) files.push_back(by_hash[i].second);
    // A hash bucket may mix contents: split it by exact equality.
    std::vector<bool> taken(files.size(), false);
    for (size_t i = 0; i < files.size(); ++i) {
      if (taken[i]) continue;
      DuplicateGroup g;
      g.whole_file = true;
      g.length = ctx.size(files[i]);
      const auto runs = ctx.data_runs(files[i]);
      g.data = ctx.data_ranges(files[i], runs);
      g.members.push_back({files[i], 0, 0, 0});
      for (size_t j = i + 1; j < files.size(); ++j) {
        if (taken[j] || !ctx.same_file(files[i], runs, files[j])) continue;
        taken[j] = true;
        g.members.push_back({files[j], 0, 0, 0});
      }
      if (g.members.size() < 2) continue;
      ctx.assign_layouts(g);
      for (const auto& m : g.members) in_whole_group[m.file] = true;
      if (g.layouts() < 2) {
        out.already_shared_files += g.members.size();
        continue;
      }
      ++out.whole_file_groups;
      out.groups.push_back(std::move(g));
    }
  }
}

struct BlockRef {
  uint32_t file;
  uint64_t block;
};

// Equal block runs in files that are not whole-file duplicates (those still serve as sources). Each run starts where a
// block equals the first earlier occurrence of its content, is extended block by block,
// then sector by sector up to EOF when both files end together.
void match_blocks(const MatchContext& ctx, uint32_t nfiles, const std::vector<bool>& skip,
                  uint64_t block_size, MatchResult& out) {
  const uint64_t spb = block_size / ctx.sectorsize();
  std::unordered_map<uint64_t, BlockRef> first_seen;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, DuplicateGroup> by_source;
  for (uint32_t f = 0; f < nfiles; ++f) {
    const uint64_t nblocks = ctx.size(f) / block_size;
    for (uint64_t i = 0; i < nblocks;) {
      bool ok = false;
      const uint64_t h = ctx.hash_sectors(f, i * spb, spb, &ok);
      if (!ok) {
        ++i;
        continue;
      }
      auto [it, fresh] = first_seen.emplace(h, BlockRef{f, i});
      if (skip[f]) {  // a whole-file duplicate: a source for others, never matched again
        ++i;
        continue;
      }
      const BlockRef src = it->second;
      if (fresh || !ctx.proven_same(src.file, src.block * spb, f, i * spb, spb)) {
        ++i;
        continue;
      }
      // Same file: the ranges must not overlap.
      auto fits = [&](uint64_t k) {
        return src.file != f || src.block + k <= i;
      };
      if (!fits(1)) {
        ++i;
        continue;
      }
      uint64_t k = 1;
      const uint64_t src_blocks = ctx.size(src.file) / block_size;
      while (i + k < nblocks && src.block + k < src_blocks && fits(k + 1) &&
             ctx.proven_same(src.file, (src.block + k) * spb, f, (i + k) * spb, spb))
        ++k;
      uint64_t length = k * block_size;
      // Sector extension past the last full block.
      const uint64_t src_off = src.block * block_size, dst_off = i * block_size;
      uint64_t s = 0;
      while (ctx.proven_same(src.file, (src_off + length) / ctx.sectorsize() + s, f,
                              (dst_off + length) / ctx.sectorsize() + s, 1) &&
             (src.file != f || src_off + length + (s + 1) * ctx.sectorsize() <= dst_off))
        ++s;
      length += s * ctx.sectorsize();
      const uint64_t src_left = ctx.size(src.file) - src_off, dst_left = ctx.size(f) - dst_off;
      if (length > src_left || length > dst_left) {
        // A partial last sector: only when both ranges end exactly at EOF.
        length = (src_left == dst_left) ? src_left
                                         : (std::min(src_left, dst_left) / ctx.sectorsize()) *
                                               ctx.sectorsize();
      }
      auto& g = by_source[{src.file, src_off, length}];
      if (g.members.empty()) {
        g.length = length;
        g.members.push_back({src.file, src_off, 0, 0});
      }
      g.members.push_back({f, dst_off, 0, 0});
      i += std::max<uint64_t>(k, length / block_size);
    }
  }
  for (auto& [key, g] : by_source) {
    (void)key;
    ctx.assign_layouts(g);
    if (g.layouts() < 2) continue;
    ++out.partial_groups;
    out.groups.push_back(std::move(g));
  }
}

}  // namespace

uint32_t DuplicateGroup::layouts() const {
  std::set<uint32_t> ids;
  for (const auto& m : members) ids.insert(m.layout);
  return static_cast<uint32_t>(ids.size());
}

uint64_t DuplicateGroup::data_bytes() const {
  if (data.empty()) return length;
  uint64_t n = 0;
  for (const auto& r : data) n += r.length;
  return n;
}

uint64_t DuplicateGroup::dedupable_bytes() const {
  uint64_t n = 0;
  for (const auto& m : members) n += m.layout != members.front().layout;
  return n * data_bytes();
}

MatchResult find_duplicates(const ScanResult& scan, const FingerprintResult& fp,
                            const MatchOptions& options) {
  MatchResult out;
  const MatchContext ctx(scan, fp);
  const auto nfiles = static_cast<uint32_t>(scan.files.size());
  std::vector<bool> in_whole_group(nfiles, false);
  match_whole_files(ctx, nfiles, out, in_whole_group);
  const uint32_t ss = scan.fs.sectorsize;
  if (options.partial && ss && options.block_size >= ss && options.block_size % ss == 0)
    match_blocks(ctx, nfiles, in_whole_group, options.block_size, out);
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const DuplicateGroup& a, const DuplicateGroup& b) { return a.length > b.length; });
  for (const auto& g : out.groups) out.candidate_bytes += g.dedupable_bytes();
  return out;
}

}  // namespace btrdedupe
