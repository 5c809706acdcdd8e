#include "src/match/run_match.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "src/match/anchor_index.h"
#include "src/fingerprint/sum_anchors.h"

namespace btrdedupe {
namespace {

// Bytes [src_off, src_off + length) of file src equal those at dst_off of the file matched.
struct EqualRun {
  uint32_t src = 0;
  uint64_t src_off = 0, dst_off = 0, length = 0;
};

class RunFinder {
 public:
  RunFinder(const MatchContext& ctx, uint64_t min_run_bytes)
      : ctx_(ctx),
        ss_(ctx.sectorsize()),
        shape_(anchor_shape(min_run_bytes, ctx.sectorsize(), ctx.csum_size())),
        min_bytes_(std::max<uint64_t>(min_run_bytes, (shape_.k - 1) * uint64_t{ss_} + 1)) {}

  // Indexes file f's anchors and, unless it is a source only, matches it against the
  // files before it (and its own earlier sectors).
  void add_file(uint32_t f, bool source_only) {
    const AnchorRules rules{ctx_.csum_size(), ctx_.nodatasum(f), ctx_.residue_possible()};
    uint64_t done_until = 0;  // f's sectors below this are in a run of f already
    for_each_anchor(ctx_.sums(f), shape_, rules, [&](uint64_t sector, uint64_t hash) {
      if (sector > UINT32_MAX) return;
      const SectorRef here{f, static_cast<uint32_t>(sector)};
      const auto seen = index_.find_or_add(hash, here);
      if (!seen || source_only || sector < done_until) return;
      if (const auto run = extend(*seen, here, done_until)) {
        add(f, *run);
        done_until = (run->dst_off + run->length + ss_ - 1) / ss_;
      } else if (seen->file != f) {
        // The copy first seen has too little equal context here: a later copy may have
        // more (a zero run first seen in a short tail, then in two long ones).
        index_.replace(hash, here);
      }
    });
  }

  // The groups found, each proposed only when its members do not all share storage.
  void finish(MatchResult& out) {
    for (auto& [key, g] : by_source_) {
      (void)key;
      ctx_.assign_layouts(g);
      if (g.layouts() < 2) continue;
      ++out.partial_groups;
      out.groups.push_back(std::move(g));
    }
    out.anchor_index_entries = index_.size();
    out.anchor_index_bytes = index_.memory_bytes();
  }

 private:
  // The longest equal run through the anchor's k sectors at `src` and `dst`, starting at
  // or after sector `floor` of dst's file; nullopt when shorter than the minimum.
  std::optional<EqualRun> extend(SectorRef src, SectorRef dst, uint64_t floor) const {
    const uint32_t g = src.file, f = dst.file;
    if (ctx_.nodatasum(g) != ctx_.nodatasum(f)) return std::nullopt;
    if (g == f && src.sector >= dst.sector) return std::nullopt;
    uint64_t q = src.sector, p = dst.sector;
    for (uint64_t i = 0; i < shape_.k; ++i)  // the hash proposed; the sums decide
      if (!ctx_.same_usable(g, q + i, f, p + i)) return std::nullopt;
    // Within one file the two ranges may not overlap: at most the distance between them.
    const uint64_t cap = g == f ? p - q : UINT64_MAX;
    uint64_t n = shape_.k;
    if (n > cap) return std::nullopt;
    while (n < cap && q > 0 && p > floor && ctx_.same_usable(g, q - 1, f, p - 1)) {
      --q;
      --p;
      ++n;
    }
    while (n < cap && ctx_.same_usable(g, q + n, f, p + n)) ++n;
    EqualRun run{g, q * ss_, p * ss_, n * ss_};
    const uint64_t src_left = ctx_.size(g) - run.src_off, dst_left = ctx_.size(f) - run.dst_off;
    if (run.length > src_left || run.length > dst_left) {
      // A partial last sector: only when both ranges end exactly at EOF.
      run.length = src_left == dst_left ? src_left : std::min(src_left, dst_left) / ss_ * ss_;
    }
    if (run.length < min_bytes_) return std::nullopt;
    return run;
  }

  void add(uint32_t f, const EqualRun& run) {
    auto& g = by_source_[{run.src, run.src_off, run.length}];
    if (g.members.empty()) {
      g.length = run.length;
      g.members.push_back({run.src, run.src_off, 0, 0});
    }
    g.members.push_back({f, run.dst_off, 0, 0});
  }

  const MatchContext& ctx_;
  const uint32_t ss_;
  const AnchorShape shape_;
  const uint64_t min_bytes_;  // -b, and never under k sectors' worth of sums (64 bits)
  AnchorIndex index_;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, DuplicateGroup> by_source_;
};

}  // namespace

void match_runs(const MatchContext& ctx, const std::vector<bool>& sources_only,
                uint64_t min_run_bytes, MatchResult& out) {
  RunFinder finder(ctx, min_run_bytes);
  for (uint32_t f = 0; f < sources_only.size(); ++f) finder.add_file(f, sources_only[f]);
  finder.finish(out);
}

}  // namespace btrdedupe
