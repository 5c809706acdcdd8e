#include "src/plan/chained_sources.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace btrdedupe {
namespace {

// A destination range [start, end) of `file` and where its bytes come from.
struct Link {
  uint32_t file = 0, from_file = 0;
  uint64_t start = 0, end = 0;
  uint64_t from_offset = 0;  // of `start`
};

// Source bytes of a round, [at, at + length) relative to the round, taken from `file`.
struct Piece {
  uint64_t at = 0, length = 0;
  uint32_t file = 0;
  uint64_t offset = 0;
};

// Deeper than any plan's chains (copies of copies): only a loop reaches it.
constexpr int kMaxDepth = 8;

// Every destination range of the plan, flat and sorted by (file, start): no map of a
// vector per file, as a plan of whole copies has a destination in every other file.
class Links {
 public:
  explicit Links(const DedupePlan& plan) {
    std::vector<std::pair<Link, size_t>> all;  // with the round, for the order of overlaps
    for (size_t i = 0; i < plan.rounds.size(); ++i) {
      const auto& r = plan.rounds[i];
      for (const auto& d : r.destinations)
        all.push_back({{d.file, r.source.file, d.offset, d.offset + r.length, r.source.offset}, i});
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return std::tie(a.first.file, a.first.start, a.second) <
             std::tie(b.first.file, b.first.start, b.second);
    });
    links_.reserve(all.size());
    // Where two rounds write the same bytes, the first planned keeps them.
    for (const auto& [link, round] : all) {
      Link l = link;
      if (!links_.empty() && links_.back().file == l.file && links_.back().end > l.start) {
        if (links_.back().end >= l.end) continue;
        l.from_offset += links_.back().end - l.start;
        l.start = links_.back().end;
      }
      links_.push_back(l);
    }
  }

  // Whether any destination range covers part of [offset, offset + length) of `file`.
  bool covers(uint32_t file, uint64_t offset, uint64_t length) const {
    const auto it = first_past(file, offset);
    return it != links_.end() && it->file == file && it->start < offset + length;
  }

  // Appends where bytes [offset, offset + length) of `file` come from, at `at` onwards.
  void resolve(uint32_t file, uint64_t offset, uint64_t length, uint64_t at, int depth,
               std::vector<Piece>& out) const {
    if (depth >= kMaxDepth) return keep(file, offset, length, at, out);
    const uint64_t end = offset + length;
    uint64_t pos = offset;
    for (auto it = first_past(file, offset);
         it != links_.end() && it->file == file && it->start < end && pos < end; ++it) {
      if (it->start > pos) {
        keep(file, pos, it->start - pos, at + (pos - offset), out);
        pos = it->start;
      }
      const uint64_t upto = std::min(it->end, end);
      resolve(it->from_file, it->from_offset + (pos - it->start), upto - pos, at + (pos - offset),
              depth + 1, out);
      pos = upto;
    }
    if (pos < end) keep(file, pos, end - pos, at + (pos - offset), out);
  }

 private:
  // The first link of `file` that ends past `offset` (or of a later file).
  std::vector<Link>::const_iterator first_past(uint32_t file, uint64_t offset) const {
    return std::lower_bound(links_.begin(), links_.end(), std::make_pair(file, offset),
                            [](const Link& l, const std::pair<uint32_t, uint64_t>& k) {
                              return l.file < k.first || (l.file == k.first && l.end <= k.second);
                            });
  }

  static void keep(uint32_t file, uint64_t offset, uint64_t length, uint64_t at,
                   std::vector<Piece>& out) {
    if (!out.empty()) {
      Piece& last = out.back();
      if (last.file == file && last.at + last.length == at && last.offset + last.length == offset) {
        last.length += length;
        return;
      }
    }
    out.push_back({at, length, file, offset});
  }

  std::vector<Link> links_;
};

bool overlaps(const RangeRef& a, const RangeRef& b, uint64_t length) {
  return a.file == b.file && a.offset < b.offset + length && b.offset < a.offset + length;
}

// The rounds that replace `r`: one per piece of its source, with the destinations that
// do not overlap the piece's new source.
void cut(const DedupeRound& r, const std::vector<Piece>& pieces, const FileExtentIndex& index,
         std::vector<DedupeRound>& out, ChainedSources& tally) {
  for (const auto& p : pieces) {
    DedupeRound piece;
    piece.source = {p.file, p.offset};
    piece.length = p.length;
    piece.group = r.group;
    piece.disk_order = index.disk_address(p.file, p.offset);
    if (p.file != r.source.file || p.offset != r.source.offset + p.at) tally.bytes_moved += p.length;
    for (const auto& d : r.destinations) {
      const RangeRef dest{d.file, d.offset + p.at};
      if (!overlaps(dest, piece.source, p.length)) piece.destinations.push_back(dest);
    }
    if (!piece.destinations.empty()) out.push_back(std::move(piece));
  }
}

}  // namespace

ChainedSources take_sources_past_destinations(DedupePlan& plan, const FileExtentIndex& index) {
  ChainedSources out;
  // Most plans have no file that is both a source and a destination: a byte per file
  // says so before any range is indexed.
  std::vector<uint8_t> written;
  for (const auto& r : plan.rounds)
    for (const auto& d : r.destinations) {
      if (d.file >= written.size()) written.resize(d.file + 1, 0);
      written[d.file] = 1;
    }
  if (std::none_of(plan.rounds.begin(), plan.rounds.end(), [&](const DedupeRound& r) {
        return r.source.file < written.size() && written[r.source.file];
      }))
    return out;
  written = {};
  std::optional<Links> links(std::in_place, plan);
  std::vector<DedupeRound> pieces_of_changed;
  std::vector<Piece> pieces;
  size_t kept = 0;
  for (size_t i = 0; i < plan.rounds.size(); ++i) {
    DedupeRound& r = plan.rounds[i];
    if (!links->covers(r.source.file, r.source.offset, r.length)) {
      if (kept != i) plan.rounds[kept] = std::move(r);
      ++kept;
      continue;
    }
    pieces.clear();
    links->resolve(r.source.file, r.source.offset, r.length, 0, 0, pieces);
    ++out.rounds_changed;
    cut(r, pieces, index, pieces_of_changed, out);
  }
  if (!out.rounds_changed) return out;
  links.reset();
  plan.rounds.resize(kept);
  for (auto& r : pieces_of_changed) plan.rounds.push_back(std::move(r));
  plan.planned_bytes = 0;
  for (const auto& r : plan.rounds) plan.planned_bytes += r.length * r.destinations.size();
  return out;
}

}  // namespace btrdedupe
