#include "src/match/duplicate_match.h"

#include <algorithm>
#include <set>

#include "src/match/match_context.h"
#include "src/match/run_match.h"

namespace btrdedupe {
namespace {

// The whole-file group of `same` (files of one content), unless they share storage already.
void add_whole_file_group(const MatchContext& ctx, const std::vector<uint32_t>& same,
                          MatchResult& out) {
  DuplicateGroup g;
  g.whole_file = true;
  g.length = ctx.size(same.front());
  g.data = ctx.data_ranges(same.front(), ctx.data_runs(same.front()));
  for (uint32_t f : same) g.members.push_back({f, 0, 0, 0});
  ctx.assign_layouts(g);
  if (g.layouts() < 2) {
    out.already_shared_files += g.members.size();
    return;
  }
  ++out.whole_file_groups;
  out.groups.push_back(std::move(g));
}

void sort_largest_first(std::vector<DuplicateGroup>& groups) {
  std::stable_sort(groups.begin(), groups.end(), [](const DuplicateGroup& a,
                                                    const DuplicateGroup& b) {
    return a.length > b.length;
  });
}

// Whole-file duplicates: grouped by (size, datasum, hole map, data sums), every data sector
// known. Holes are content: the same data at other places is not the same file.
// Files whose data sums hold under 64 bits (one crc32c sector) are listed as candidates,
// not grouped: a 32-bit sum and a size are no evidence of equal bytes.
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
      const auto runs = ctx.data_runs(files[i]);
      std::vector<uint32_t> same{files[i]};
      for (size_t j = i + 1; j < files.size(); ++j) {
        if (taken[j] || !ctx.same_file(files[i], runs, files[j])) continue;
        taken[j] = true;
        same.push_back(files[j]);
      }
      if (same.size() < 2) continue;
      if (!ctx.sums_hold_64_bits(files[i])) {
        const auto data = ctx.data_ranges(files[i], runs);
        out.short_sum_files += same.size();
        out.short_sum_candidates.push_back(
            {std::move(same), data.empty() ? ByteRange{0, ctx.size(files[i])} : data.front()});
        continue;
      }
      for (uint32_t f : same) in_whole_group[f] = true;
      add_whole_file_group(ctx, same, out);
    }
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
    match_runs(ctx, in_whole_group, options.block_size, out);
  sort_largest_first(out.groups);
  for (const auto& g : out.groups) out.candidate_bytes += g.dedupable_bytes();
  return out;
}

void add_whole_file_groups(const ScanResult& scan, const FingerprintResult& fp,
                           const std::vector<std::vector<uint32_t>>& same_content,
                           MatchResult& out) {
  const MatchContext ctx(scan, fp);
  const size_t first_new = out.groups.size();
  for (const auto& same : same_content)
    if (same.size() >= 2) add_whole_file_group(ctx, same, out);
  for (size_t i = first_new; i < out.groups.size(); ++i)
    out.candidate_bytes += out.groups[i].dedupable_bytes();
  sort_largest_first(out.groups);
}

}  // namespace btrdedupe
