#include "src/read/path_table.h"

#include <algorithm>
#include <stdexcept>

namespace btrdedupe {

uint32_t PathTable::add(uint32_t parent, std::string_view name) {
  // Node numbers are 32-bit like file indexes; kRoot must never be a real node.
  if (parent_.size() >= kRoot) throw std::length_error("PathTable: too many names");
  names_.append(name);
  parent_.push_back(parent);
  end_.push_back(names_.size());
  return static_cast<uint32_t>(parent_.size() - 1);
}

std::string_view PathTable::name(uint32_t node) const {
  const uint64_t begin = node == 0 ? 0 : end_[node - 1];
  return std::string_view(names_).substr(begin, end_[node] - begin);
}

std::string PathTable::path(uint32_t node) const {
  std::vector<uint32_t> chain;
  for (uint32_t n = node; n != kRoot; n = parent_[n]) chain.push_back(n);
  size_t length = 0;
  for (uint32_t n : chain) length += name(n).size() + 1;
  std::string out;
  out.reserve(length);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += name(*it);
  }
  return out;
}

uint32_t PathTable::append(const PathTable& other) {
  if (parent_.size() + other.parent_.size() >= kRoot)
    throw std::length_error("PathTable: too many names");
  const auto base = static_cast<uint32_t>(parent_.size());
  const uint64_t name_base = names_.size();
  names_ += other.names_;
  for (uint32_t p : other.parent_) parent_.push_back(p == kRoot ? kRoot : p + base);
  for (uint64_t e : other.end_) end_.push_back(e + name_base);
  return base;
}

void PathTable::shrink_to_fit() {
  parent_.shrink_to_fit();
  end_.shrink_to_fit();
  names_.shrink_to_fit();
}

}  // namespace btrdedupe
