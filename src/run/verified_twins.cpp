#include "src/run/verified_twins.h"

#include <cstring>
#include <iterator>

namespace btrdedupe {
namespace {

// Per entry of the index beside its key and value: a node, its hash and a bucket.
constexpr size_t kIndexEntryOverhead = 32;

// Numbers as LEB128 varints: most of a twin's fields are small (sizes, offsets), and a kept
// file's record then takes ~50 bytes (~96 with its index entry), not an InodeState's ~250.
void put(std::vector<uint8_t>& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<uint8_t>(v | 0x80));
  out.push_back(static_cast<uint8_t>(v));
}

uint64_t get(const uint8_t*& in) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = *in++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

constexpr uint64_t PassedOver::*kPassedOver[] = {
    &PassedOver::inline_extents, &PassedOver::inline_bytes,     &PassedOver::hole_extents,
    &PassedOver::hole_bytes,     &PassedOver::prealloc_extents, &PassedOver::prealloc_bytes,
    &PassedOver::excluded_files, &PassedOver::readonly_aliases, &PassedOver::unreadable,
    &PassedOver::not_ours_files};
// prealloc_bytenrs is not kept: a kept twin is a source only, and only a destination's
// extents are judged by it.
static_assert(sizeof(PassedOver) ==
                  std::size(kPassedOver) * sizeof(uint64_t) + sizeof(std::vector<uint64_t>),
              "a field of PassedOver that VerifiedTwins does not keep");

// The fields kept, in this order; the passed-over counts only when any is not zero.
std::vector<uint8_t> encode(const InodeState& s) {
  std::vector<uint8_t> out;
  for (uint64_t v : {s.item.size, s.item.flags, uint64_t{s.item.mode},
                     static_cast<uint64_t>(s.item.mtime.sec), uint64_t{s.item.mtime.nsec},
                     s.parent, uint64_t{s.name.size()}})
    put(out, v);
  out.insert(out.end(), s.name.begin(), s.name.end());
  put(out, s.extents.size());
  for (const auto& e : s.extents)
    for (uint64_t v : {static_cast<uint64_t>(e.compression), e.file_offset, e.length,
                       e.disk_bytenr, e.disk_num_bytes, e.extent_offset})
      put(out, v);
  bool passed = false;
  for (auto field : kPassedOver) passed = passed || s.passed_over.*field != 0;
  put(out, passed);
  if (passed)
    for (auto field : kPassedOver) put(out, s.passed_over.*field);
  return out;
}

InodeState decode(const uint8_t* in) {
  InodeState s;
  s.item.size = get(in);
  s.item.flags = get(in);
  s.item.mode = static_cast<uint32_t>(get(in));
  s.item.mtime.sec = static_cast<int64_t>(get(in));
  s.item.mtime.nsec = static_cast<uint32_t>(get(in));
  s.parent = get(in);
  const uint64_t name_bytes = get(in);
  s.name.assign(reinterpret_cast<const char*>(in), name_bytes);
  in += name_bytes;
  s.extents.resize(get(in));
  for (auto& e : s.extents) {
    e.compression = static_cast<btrfs::Compression>(get(in));
    e.file_offset = get(in);
    e.length = get(in);
    e.disk_bytenr = get(in);
    e.disk_num_bytes = get(in);
    e.extent_offset = get(in);
  }
  if (get(in))
    for (auto field : kPassedOver) s.passed_over.*field = get(in);
  return s;
}

}  // namespace

size_t VerifiedTwins::bytes() const {
  return blocks_.size() * kBlockBytes +
         at_.size() * (sizeof(FileKey) + sizeof(Places) + kIndexEntryOverhead);
}

uint32_t VerifiedTwins::append(const std::vector<uint8_t>& record, size_t index_bytes) {
  if (record.size() > kBlockBytes) return kNone;
  const bool new_block = blocks_.empty() || blocks_.back().size() + record.size() > kBlockBytes;
  if (bytes() + index_bytes + record.size() + (new_block ? kBlockBytes : 0) > budget_)
    return kNone;
  if (new_block && blocks_.size() == kMaxBlocks) return kNone;  // no place addresses more
  if (new_block) blocks_.emplace_back().reserve(kBlockBytes);
  auto& block = blocks_.back();
  const auto at = static_cast<uint32_t>((blocks_.size() - 1) << 16 | block.size());
  block.insert(block.end(), record.begin(), record.end());
  return at;
}

bool VerifiedTwins::keep(const FileKey& key, const InodeState& state) {
  if (at_.count(key)) return true;
  const uint32_t at = append(encode(state), sizeof(FileKey) + sizeof(Places) + kIndexEntryOverhead);
  if (at == kNone) return false;
  at_.emplace(key, Places{at, kNone});
  return true;
}

std::optional<InodeState> VerifiedTwins::find(const FileKey& key) const {
  const auto it = at_.find(key);
  if (it == at_.end()) return std::nullopt;
  return decode(blocks_[it->second.state >> 16].data() + (it->second.state & 0xffff));
}

// A sums record: the sector count and the csum size, then the sums, then the known flags.
bool VerifiedTwins::keep_sums(const FileKey& key, FileSumsView sums) {
  const auto it = at_.find(key);
  if (it == at_.end()) return false;
  if (it->second.sums != kNone) return true;
  const uint64_t sectors = sums.sectors();
  std::vector<uint8_t> record;
  put(record, sectors);
  put(record, sectors ? sums.sums.size() / sectors : 0);
  record.insert(record.end(), sums.sums.begin(), sums.sums.end());
  record.insert(record.end(), sums.known.begin(), sums.known.end());
  const uint32_t at = append(record, 0);
  if (at == kNone) return false;
  it->second.sums = at;
  ++with_sums_;
  return true;
}

std::optional<FileSumsView> VerifiedTwins::find_sums(const FileKey& key) const {
  const auto it = at_.find(key);
  if (it == at_.end() || it->second.sums == kNone) return std::nullopt;
  const uint8_t* in = blocks_[it->second.sums >> 16].data() + (it->second.sums & 0xffff);
  const uint64_t sectors = get(in), csum_size = get(in);
  const size_t sum_bytes = sectors * csum_size;
  return FileSumsView{{in, sum_bytes}, {in + sum_bytes, sectors}};
}

}  // namespace btrdedupe
