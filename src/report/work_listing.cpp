#include "src/report/work_listing.h"

#include <algorithm>
#include <utility>

#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// Per group, in queue order: its first round, its bytes and those left. 24 bytes a group,
// no path and no set of files, so a plan of millions of groups stays small here.
struct GroupTally {
  size_t first_round = 0;
  uint64_t bytes = 0, bytes_left = 0;
};

void append_bounded(std::vector<GroupWork>& into, std::vector<GroupWork>&& more) {
  for (auto& g : more) {
    if (into.size() >= kWorkListed) break;
    into.push_back(std::move(g));
  }
}

}  // namespace

void WorkListing::add(WorkListing&& more) {
  append_bounded(done, std::move(more.done));
  append_bounded(left, std::move(more.left));
  groups_done += more.groups_done;
  groups_left += more.groups_left;
  bytes_done += more.bytes_done;
  bytes_left += more.bytes_left;
}

WorkListing list_work(const ScanResult& scan, const DedupePlan& plan,
                      const std::vector<uint8_t>& started) {
  std::vector<GroupTally> tally;
  std::vector<uint32_t> slot;  // group -> index in tally, or kNone
  constexpr uint32_t kNone = UINT32_MAX;
  for (size_t i = 0; i < plan.rounds.size(); ++i) {
    const auto& round = plan.rounds[i];
    if (round.group >= slot.size()) slot.resize(round.group + 1, kNone);
    if (slot[round.group] == kNone) {
      slot[round.group] = static_cast<uint32_t>(tally.size());
      tally.push_back({i, 0, 0});
    }
    GroupTally& t = tally[slot[round.group]];
    const uint64_t bytes = round.length * round.destinations.size();
    t.bytes += bytes;
    if (i >= started.size() || !started[i]) t.bytes_left += bytes;
  }
  WorkListing out;
  std::vector<uint32_t> listed(tally.size(), kNone);  // tally index -> index in its list
  for (size_t k = 0; k < tally.size(); ++k) {
    const GroupTally& t = tally[k];
    const bool left = t.bytes_left > 0;
    ++(left ? out.groups_left : out.groups_done);
    out.bytes_left += t.bytes_left;
    out.bytes_done += t.bytes - t.bytes_left;
    auto& list = left ? out.left : out.done;
    if (list.size() >= kWorkListed) continue;
    listed[k] = static_cast<uint32_t>(list.size());
    const auto& source = plan.rounds[t.first_round].source;
    list.push_back({file_path(scan, scan.files[source.file]), 0, t.bytes, t.bytes_left});
  }
  // Destinations of the listed groups: distinct files over all their rounds, in one pass.
  std::vector<std::pair<uint64_t, uint32_t>> files;  // (tally index, file)
  for (const auto& round : plan.rounds) {
    const uint32_t k = slot[round.group];
    if (listed[k] == kNone) continue;
    for (const auto& d : round.destinations) files.emplace_back(k, d.file);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  for (const auto& [k, file] : files) {
    (void)file;
    auto& list = tally[k].bytes_left > 0 ? out.left : out.done;
    ++list[listed[k]].destinations;
  }
  return out;
}

}  // namespace btrdedupe
