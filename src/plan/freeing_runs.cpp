#include "src/plan/freeing_runs.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>

#include "src/plan/chained_sources.h"
#include "src/plan/destination_ranges.h"
#include "src/match/match_context.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// Sectors [first, first + count) of `file` that a candidate extent's remainder holds; with
// eof_tail, the last of them is the file's partial last sector.
struct Piece {
  uint32_t file = 0;
  uint64_t first = 0, count = 0;
  bool eof_tail = false;
  uint32_t candidate = 0;
};

// An extent the plan does not free, and what of it is left outside the plan.
struct Candidate {
  uint64_t bytenr = 0, disk_bytes = 0;
  bool untouched = false;         // no destination range touches it (a short extent)
  uint64_t remainder_bytes = 0;   // bytes its references hold outside destination ranges
  std::vector<Piece> pieces;
  uint64_t filled_bytes = 0;      // of the remainder, by the runs found
};

struct Entry {
  uint64_t key;     // the k-gram's first 8 bytes of sums: 64 bits, the least a proposal needs
  uint32_t piece;
  uint32_t sector;  // into the piece
  bool operator<(const Entry& o) const {
    return std::tie(key, piece, sector) < std::tie(o.key, o.piece, o.sector);
  }
};

struct Run {
  uint32_t src = 0, dst = 0;
  uint64_t src_offset = 0, dst_offset = 0, length = 0;
  uint32_t candidate = 0;
};

// The references of the extent at ex[begin, end) outside the destination ranges into c,
// or false when one is in a file that may not be written (its extent can never go).
bool remainder_of(const ScanResult& scan, const RangesByFile& ranges, size_t begin, size_t end,
                  Candidate& c) {
  const uint64_t ss = scan.fs.sectorsize;
  for (size_t i = begin; i < end; ++i) {
    const FileExtent& e = scan.extents[i];
    const ScannedFile& f = scan.files[e.file];
    if (!writable(scan, f) || e.compression != btrfs::Compression::None) return false;
    const uint64_t ref_end = std::min(e.file_offset + e.length, std::max(f.size, e.file_offset + 1));
    const auto parts = uncovered(ranges.of(e.file), e.file_offset, ref_end);
    for (const auto& p : parts) {
      c.remainder_bytes += p.end - p.start;
      // Whole sectors, and a partial last one only at EOF (the kernel shares it only there).
      const bool tail = p.end == f.size && p.end % ss != 0;
      const uint64_t first = (p.start + ss - 1) / ss, last = tail ? p.end / ss + 1 : p.end / ss;
      if (last > first) c.pieces.push_back({e.file, first, last - first, tail, 0});
    }
  }
  return c.remainder_bytes > 0;
}

class FreeingRunFinder {
 public:
  FreeingRunFinder(const ScanResult& scan, const FingerprintResult& fp,
                   const std::vector<PhysicalExtent>& extents, const FreeingRunRules& rules,
                   const RangesByFile& ranges, std::vector<uint64_t> sources)
      : scan_(scan), ctx_(scan, fp), extents_(extents), rules_(rules), ranges_(ranges),
        sources_(std::move(sources)),
        ss_(scan.fs.sectorsize),
        k_(std::max<uint64_t>(1, (8 + scan.fs.csum_size - 1) / std::max<uint16_t>(scan.fs.csum_size, 1))),
        unwritten_(scan.passed_over.prealloc_bytenrs) {
    std::sort(unwritten_.begin(), unwritten_.end());
  }

  std::vector<Run> find(FreeingRuns& out) {
    collect_candidates();
    build_index();
    out.index_entries = index_.size();
    if (index_.empty()) return {};
    for (uint32_t g = 0; g < scan_.files.size(); ++g) search_file(g);
    return accepted(out);
  }

 private:
  void collect_candidates();
  void build_index();
  std::optional<uint64_t> key_at(uint32_t f, uint64_t s) const;
  void search_file(uint32_t g);
  std::optional<uint64_t> source_limit(const FileExtent& e) const;
  void look_up(uint32_t g, uint64_t s, uint64_t floor, uint64_t ceiling, uint64_t below);
  uint64_t tail_bytes(uint32_t g, uint64_t q, const Piece& p, uint64_t t) const;
  std::vector<Run> accepted(FreeingRuns& out);

  const ScanResult& scan_;
  MatchContext ctx_;
  const std::vector<PhysicalExtent>& extents_;
  const FreeingRunRules& rules_;
  const RangesByFile& ranges_;
  const std::vector<uint64_t> sources_;  // extents rounds read from, sorted
  const uint64_t ss_, k_;
  std::vector<Candidate> candidates_;
  std::vector<uint64_t> unwritten_;       // extents prealloc items also name: they stay
  std::vector<uint64_t> kept_;            // destination extents mostly outside the plan
  std::vector<uint64_t> tried_;           // candidates' addresses, sorted
  std::vector<Piece> pieces_;
  std::vector<std::vector<uint8_t>> filled_;  // per piece, per sector
  std::vector<Entry> index_;
  std::vector<Run> runs_;
};

void FreeingRunFinder::collect_candidates() {
  const auto& ex = scan_.extents;
  auto pe = extents_.begin();
  for (size_t i = 0; i < ex.size();) {
    size_t end = i;
    while (end < ex.size() && ex[end].disk_bytenr == ex[i].disk_bytenr) ++end;
    while (pe != extents_.end() && pe->bytenr < ex[i].disk_bytenr) ++pe;
    const bool touched = pe != extents_.end() && pe->bytenr == ex[i].disk_bytenr;
    Candidate c;
    c.bytenr = ex[i].disk_bytenr;
    c.disk_bytes = ex[i].disk_num_bytes;
    c.untouched = !touched;
    // An extent the plan does not touch nor read from is tried when shorter than the
    // matcher's runs (-b): longer ones it would have found.
    const bool untouched_short = !touched && c.disk_bytes < rules_.untouched_below &&
                                 !std::binary_search(sources_.begin(), sources_.end(), c.bytenr);
    if ((touched && !pe->freed_by_plan) || untouched_short) {
      const bool may_go = remainder_of(scan_, ranges_, i, end, c) &&
                          !std::binary_search(unwritten_.begin(), unwritten_.end(), c.bytenr);
      // Mostly left outside the plan: kept, and so a source for the others.
      if (touched && (!may_go || c.remainder_bytes * 2 > c.disk_bytes))
        kept_.push_back(c.bytenr);
      else if (may_go)
        candidates_.push_back(std::move(c));
    }
    i = end;
  }
  // Those nearest to going first, within the index's bound.
  std::stable_sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    return a.remainder_bytes * b.disk_bytes < b.remainder_bytes * a.disk_bytes;
  });
}

void FreeingRunFinder::build_index() {
  for (uint32_t ci = 0; ci < candidates_.size(); ++ci) {
    size_t sectors = 0;
    for (const auto& p : candidates_[ci].pieces) sectors += p.count;
    if (index_.size() + sectors > rules_.max_index_entries) {
      candidates_.resize(ci);
      break;
    }
    tried_.push_back(candidates_[ci].bytenr);
    for (auto p : candidates_[ci].pieces) {
      p.candidate = ci;
      const auto id = static_cast<uint32_t>(pieces_.size());
      pieces_.push_back(p);
      filled_.emplace_back(p.count, uint8_t{0});
      for (uint64_t s = 0; s + k_ <= p.count; ++s)
        if (const auto key = key_at(p.file, p.first + s))
          index_.push_back({*key, id, static_cast<uint32_t>(s)});
    }
  }
  std::sort(index_.begin(), index_.end());
  std::sort(tried_.begin(), tried_.end());
}

// The k sums at sector s of f as a key, when all are usable as evidence.
std::optional<uint64_t> FreeingRunFinder::key_at(uint32_t f, uint64_t s) const {
  for (uint64_t i = 0; i < k_; ++i)
    if (!ctx_.usable(f, s + i)) return std::nullopt;
  uint64_t key = 0;
  std::memcpy(&key, ctx_.sector_sums(f, s, k_), std::min<size_t>(8, k_ * ctx_.csum_size()));
  return key;
}

// Whether file data on extent e may be a run's source, and for which candidates: those at
// a higher address than the one returned (e's own when e is itself a short untouched
// candidate: of two equal short extents the first stays; 0 otherwise); nullopt: none.
std::optional<uint64_t> FreeingRunFinder::source_limit(const FileExtent& e) const {
  if (e.compression != btrfs::Compression::None) return std::nullopt;
  const auto it = std::lower_bound(extents_.begin(), extents_.end(), e.disk_bytenr,
                                   [](const PhysicalExtent& p, uint64_t b) { return p.bytenr < b; });
  const bool touched = it != extents_.end() && it->bytenr == e.disk_bytenr;
  if (touched) {
    if (std::binary_search(kept_.begin(), kept_.end(), e.disk_bytenr)) return 0;
    return std::nullopt;
  }
  return std::binary_search(tried_.begin(), tried_.end(), e.disk_bytenr) ? e.disk_bytenr : 0;
}

// Looks up every k-gram of file g's data on extents that may be sources.
void FreeingRunFinder::search_file(uint32_t g) {
  for (uint32_t idx : ctx_.extents_of(g)) {
    const FileExtent& e = scan_.extents[idx];
    const auto below = source_limit(e);
    if (!below) continue;
    const auto parts = uncovered(ranges_.of(g), e.file_offset, e.file_offset + e.length);
    for (const auto& p : parts) {
      const uint64_t first = (p.start + ss_ - 1) / ss_;
      const uint64_t last = std::min((p.end + ss_ - 1) / ss_, ctx_.sectors(g));
      for (uint64_t s = first; s + k_ <= last; ++s) look_up(g, s, first, last, *below);
    }
  }
}

// Bytes of sector t of piece p a run from sector q of g covers: all of it, or at EOF of
// both files the same partial length; 0 where they differ.
uint64_t FreeingRunFinder::tail_bytes(uint32_t g, uint64_t q, const Piece& p, uint64_t t) const {
  const bool dst_tail = p.eof_tail && t + 1 == p.count;
  const uint64_t src_left = ctx_.size(g) - std::min(ctx_.size(g), q * ss_);
  if (!dst_tail) return src_left >= ss_ ? ss_ : 0;
  const uint64_t dst_left = ctx_.size(p.file) - (p.first + t) * ss_;
  return src_left == dst_left ? dst_left : 0;
}

// Sector s of g (on source data from sector floor to ceiling) against the remainders of
// candidates at addresses below `below`.
void FreeingRunFinder::look_up(uint32_t g, uint64_t s, uint64_t floor, uint64_t ceiling,
                               uint64_t below) {
  const auto key = key_at(g, s);
  if (!key) return;
  for (auto it = std::lower_bound(index_.begin(), index_.end(), Entry{*key, 0, 0});
       it != index_.end() && it->key == *key; ++it) {
    const Piece& p = pieces_[it->piece];
    auto& filled = filled_[it->piece];
    const Candidate& c = candidates_[p.candidate];
    if (filled[it->sector] || c.bytenr <= below) continue;
    if (ctx_.nodatasum(p.file) != ctx_.nodatasum(g)) continue;
    uint64_t q = s, t = it->sector, n = 0, bytes = 0;
    while (t + n < p.count && q + n < ceiling && !filled[t + n] &&
           ctx_.same_usable(g, q + n, p.file, p.first + t + n)) {
      const uint64_t b = tail_bytes(g, q + n, p, t + n);
      if (!b) break;
      bytes += b, ++n;
      if (b < ss_) break;  // EOF
    }
    if (n < k_) continue;
    while (t > 0 && q > floor && !filled[t - 1] && ctx_.same_usable(g, q - 1, p.file, p.first + t - 1))
      --t, --q, ++n, bytes += ss_;
    std::fill(filled.begin() + static_cast<std::ptrdiff_t>(t),
              filled.begin() + static_cast<std::ptrdiff_t>(t + n), uint8_t{1});
    candidates_[p.candidate].filled_bytes += bytes;
    runs_.push_back({g, p.file, q * ss_, (p.first + t) * ss_, bytes, p.candidate});
  }
}

// The runs of the candidates they let go (filled, or left within the rewrite's rule) that
// the rewrite alone would not: a short extent untouched by the plan, or a remainder over
// the rule.
std::vector<Run> FreeingRunFinder::accepted(FreeingRuns& out) {
  const RemainderRules& r = rules_.remainder;
  std::vector<uint8_t> goes(candidates_.size(), 0);
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const Candidate& c = candidates_[i];
    const auto within_rule = [&](uint64_t left) {
      return left == 0 || (left <= r.max_remainder_bytes && left * r.max_remainder_share <= c.disk_bytes);
    };
    const uint64_t left = c.remainder_bytes - std::min(c.remainder_bytes, c.filled_bytes);
    goes[i] = c.filled_bytes && within_rule(left) && (c.untouched || !within_rule(c.remainder_bytes));
    out.extents += goes[i];
  }
  std::vector<Run> keep;
  for (const auto& run : runs_)
    if (goes[run.candidate]) keep.push_back(run);
  return keep;
}

// Whether any extent could be a candidate: the plan leaves a destination extent, or an
// extent shorter than -b is neither touched nor read from. A tree of whole copies has
// none, and then builds none of the finder's indexes (they would add to its peak memory).
bool worth_looking(const ScanResult& scan, const std::vector<PhysicalExtent>& extents,
                   const std::vector<uint64_t>& sources, const FreeingRunRules& rules) {
  for (const auto& e : extents)
    if (!e.freed_by_plan && !e.unwritten_refs) return true;
  for (const auto& e : scan.extents) {
    if (e.disk_num_bytes >= rules.untouched_below) continue;
    if (std::binary_search(sources.begin(), sources.end(), e.disk_bytenr)) continue;
    const auto it = std::lower_bound(extents.begin(), extents.end(), e.disk_bytenr,
                                     [](const PhysicalExtent& p, uint64_t b) { return p.bytenr < b; });
    if (it == extents.end() || it->bytenr != e.disk_bytenr) return true;
  }
  return false;
}

}  // namespace

FreeingRuns add_freeing_runs(const ScanResult& scan, const FingerprintResult& fp,
                             const std::vector<PhysicalExtent>& extents,
                             const FreeingRunRules& rules, bool most_valuable_first,
                             MatchResult& matches, DedupePlan& plan) {
  FreeingRuns out;
  auto sources = source_extents(scan, plan);
  if (!scan.fs.sectorsize || !worth_looking(scan, extents, sources, rules)) return out;
  const auto ranges = destination_ranges(plan);
  const auto runs = FreeingRunFinder(scan, fp, extents, rules, ranges, std::move(sources)).find(out);
  if (runs.empty()) return out;
  const FileExtentIndex index(scan);
  for (const auto& run : runs) {
    DuplicateGroup g;
    g.length = run.length;
    g.members = {{run.src, run.src_offset, 0, 1}, {run.dst, run.dst_offset, 1, 1}};
    DedupeRound round;
    round.source = {run.src, run.src_offset};
    round.length = run.length;
    round.destinations = {{run.dst, run.dst_offset}};
    round.group = static_cast<uint32_t>(matches.groups.size());
    round.disk_order = index.disk_address(run.src, run.src_offset);
    plan.planned_bytes += round.length;
    plan.rounds.push_back(std::move(round));
    matches.candidate_bytes += g.length;
    matches.groups.push_back(std::move(g));
    ++matches.partial_groups;
    ++out.groups;
    out.bytes += run.length;
  }
  // A run may write into a range other rounds read from (a copy that was a group's source
  // and is now found in a kept extent): those rounds now read from where its bytes go.
  take_sources_past_destinations(plan, index);
  std::stable_sort(plan.rounds.begin(), plan.rounds.end(),
                   [](const DedupeRound& a, const DedupeRound& b) { return a.disk_order < b.disk_order; });
  if (most_valuable_first) order_most_valuable_first(plan);
  return out;
}

}  // namespace btrdedupe
