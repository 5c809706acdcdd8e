#include "src/chained_sources.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace btrdedupe {
namespace {

// A destination range [start, end) of `file` and where its bytes come from.
struct Link {
  uint64_t start = 0, end = 0;
  uint32_t from_file = 0;
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

class LinksByFile {
 public:
  explicit LinksByFile(const DedupePlan& plan) {
    struct Entry {
      uint32_t file;
      Link link;
      size_t round;
    };
    std::vector<Entry> all;
    for (size_t i = 0; i < plan.rounds.size(); ++i) {
      const auto& r = plan.rounds[i];
      for (const auto& d : r.destinations)
        all.push_back({d.file, {d.offset, d.offset + r.length, r.source.file, r.source.offset}, i});
    }
    std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.file, a.link.start, a.round) < std::tie(b.file, b.link.start, b.round);
    });
    // Where two rounds write the same bytes, the first planned keeps them.
    for (const auto& e : all) {
      auto& v = links_[e.file];
      Link l = e.link;
      if (!v.empty() && v.back().end > l.start) {
        if (v.back().end >= l.end) continue;
        l.from_offset += v.back().end - l.start;
        l.start = v.back().end;
      }
      v.push_back(l);
    }
  }

  // Appends where bytes [offset, offset + length) of `file` come from, at `at` onwards.
  void resolve(uint32_t file, uint64_t offset, uint64_t length, uint64_t at, int depth,
               std::vector<Piece>& out) const {
    const auto found = links_.find(file);
    if (found == links_.end() || depth >= kMaxDepth) return keep(file, offset, length, at, out);
    const auto& v = found->second;
    auto it = std::upper_bound(v.begin(), v.end(), offset,
                               [](uint64_t o, const Link& l) { return o < l.end; });
    const uint64_t end = offset + length;
    uint64_t pos = offset;
    for (; it != v.end() && it->start < end && pos < end; ++it) {
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

  std::unordered_map<uint32_t, std::vector<Link>> links_;
};


bool overlaps(const RangeRef& a, const RangeRef& b, uint64_t length) {
  return a.file == b.file && a.offset < b.offset + length && b.offset < a.offset + length;
}

}  // namespace

ChainedSources take_sources_past_destinations(DedupePlan& plan, const FileExtentIndex& index) {
  ChainedSources out;
  const LinksByFile links(plan);
  std::vector<DedupeRound> rounds;
  rounds.reserve(plan.rounds.size());
  std::vector<Piece> pieces;
  for (auto& r : plan.rounds) {
    pieces.clear();
    links.resolve(r.source.file, r.source.offset, r.length, 0, 0, pieces);
    if (pieces.size() == 1 && pieces[0].file == r.source.file &&
        pieces[0].offset == r.source.offset) {
      rounds.push_back(std::move(r));
      continue;
    }
    ++out.rounds_changed;
    for (const auto& p : pieces) {
      DedupeRound piece;
      piece.source = {p.file, p.offset};
      piece.length = p.length;
      piece.group = r.group;
      piece.disk_order = index.disk_address(piece.source.file, piece.source.offset);
      if (p.file != r.source.file || p.offset != r.source.offset + p.at) out.bytes_moved += p.length;
      for (const auto& d : r.destinations) {
        const RangeRef dest{d.file, d.offset + p.at};
        if (!overlaps(dest, piece.source, p.length)) piece.destinations.push_back(dest);
      }
      if (!piece.destinations.empty()) rounds.push_back(std::move(piece));
    }
  }
  plan.rounds = std::move(rounds);
  plan.planned_bytes = 0;
  for (const auto& r : plan.rounds) plan.planned_bytes += r.length * r.destinations.size();
  return out;
}

}  // namespace btrdedupe
