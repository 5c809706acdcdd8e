#include "src/scope/subvolume_sets.h"

#include <algorithm>

namespace btrdedupe {

const std::vector<uint64_t>& FileSubvolumeSets::subvolumes(uint32_t set) const {
  return set < sets_.size() ? sets_[set] : sets_[0];
}

uint32_t FileSubvolumeSets::with(uint32_t set, uint64_t subvolume) {
  auto cached = with_.find({set, subvolume});
  if (cached != with_.end()) return cached->second;
  std::vector<uint64_t> s = sets_[set];
  const auto at = std::lower_bound(s.begin(), s.end(), subvolume);
  uint32_t result = set;
  if (at == s.end() || *at != subvolume) {
    s.insert(at, subvolume);
    auto it = index_.find(s);
    if (it == index_.end()) {
      it = index_.emplace(s, static_cast<uint32_t>(sets_.size())).first;
      sets_.push_back(std::move(s));
    }
    result = it->second;
  }
  with_.emplace(std::make_pair(set, subvolume), result);
  return result;
}

void FileSubvolumeSets::add(uint32_t file, uint64_t subvolume) {
  if (file >= of_file_.size()) of_file_.resize(file + 1, 0);
  of_file_[file] = with(of_file_[file], subvolume);
}

void FileSubvolumeSets::add_all(uint32_t file, const FileSubvolumeSets& other, uint32_t set) {
  for (uint64_t s : other.subvolumes(set)) add(file, s);
}

}  // namespace btrdedupe
