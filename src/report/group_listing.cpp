#include "src/report/group_listing.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <tuple>

namespace btrdedupe {
namespace {

// Fixed-width fields in native order: the file never outlives the process that wrote it.
// A run is encoded into a buffer written out in pieces of kEncodeBufferBytes: a window's
// run is ~100,000 small fields, and a stdio call each cost more than the encoding; the
// bound keeps a run's bytes from being held a second time whole.
constexpr size_t kEncodeBufferBytes = 256 << 10;
template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void encode_listing(std::string& out, const GroupListing& g) {
  put(out, g.length);
  put(out, static_cast<uint8_t>(g.whole_file));
  put(out, static_cast<uint64_t>(g.members.size()));
  for (const auto& m : g.members) {
    const uint8_t roles = (m.source ? 1 : 0) | (m.destination ? 2 : 0);
    put(out, static_cast<uint64_t>(m.path.size()));
    out.append(m.path);
    put(out, m.offset);
    put(out, m.layout);
    put(out, roles);
  }
}

// One run of the spill file read through a buffer of its own (pread: the runs are read
// side by side), so that a merge of many runs holds a buffer each, not the runs.
class RunReader {
 public:
  RunReader(int fd, uint64_t offset, uint64_t end, size_t buffer)
      : fd_(fd), next_(offset), end_(end), buffer_(buffer) {}

  bool read(void* to, size_t n) {
    auto* out = static_cast<char*>(to);
    while (n > 0) {
      if (left_ == 0 && !fill()) return false;
      const size_t take = std::min(n, left_);
      std::memcpy(out, buffer_.data() + at_, take);
      at_ += take, left_ -= take, out += take, n -= take;
    }
    return true;
  }
  template <typename T>
  bool get(T& v) {
    return read(&v, sizeof v);
  }

 private:
  bool fill() {
    if (left_ > 0) return true;
    const uint64_t want = std::min<uint64_t>(buffer_.size(), end_ - next_);
    if (want == 0) return false;
    const ssize_t got = ::pread(fd_, buffer_.data(), want, static_cast<off_t>(next_));
    if (got <= 0) return false;
    next_ += static_cast<uint64_t>(got);
    at_ = 0, left_ = static_cast<size_t>(got);
    return true;
  }

  int fd_;
  uint64_t next_, end_;
  std::vector<char> buffer_;
  size_t at_ = 0, left_ = 0;
};

bool read_listing(RunReader& in, GroupListing& g) {
  uint8_t whole = 0;
  uint64_t members = 0;
  if (!in.get(g.length) || !in.get(whole) || !in.get(members)) return false;
  g.whole_file = whole != 0;
  g.members.resize(members);
  for (auto& m : g.members) {
    uint64_t length = 0;
    uint8_t roles = 0;
    if (!in.get(length)) return false;
    m.path.resize(length);
    if (!in.read(m.path.data(), length) || !in.get(m.offset) || !in.get(m.layout) ||
        !in.get(roles))
      return false;
    m.source = roles & 1;
    m.destination = roles & 2;
  }
  return true;
}

// What the listings of one source range have in common, in the order they are listed.
auto source_key(const GroupListing& g) {
  static const GroupListing::Member none;
  const GroupListing::Member* key = g.members.empty() ? &none : &g.members.front();
  for (const auto& m : g.members)
    if (m.source) {
      key = &m;
      break;
    }
  return std::make_tuple(~g.length, !g.whole_file, std::string_view(key->path), key->offset);
}

// Adds the members of `more` that `into` does not list yet.
void merge_members(GroupListing& into, GroupListing& more) {
  for (auto& m : more.members) {
    const bool listed = std::any_of(into.members.begin(), into.members.end(), [&](const auto& x) {
      return x.offset == m.offset && x.path == m.path;
    });
    if (!listed) into.members.push_back(std::move(m));
  }
}

// Reading buffers of a merge: 64 KiB a run, less when there are many (at least 4 KiB).
constexpr size_t kMergeBufferBytes = 4 << 20;
constexpr size_t kRunBufferBytes = 64 << 10, kSmallestRunBuffer = 4 << 10;

struct SpilledRun {
  uint64_t offset = 0, end = 0, listings = 0;
};

// The sorted runs of a spill file merged: next() gives each source range's listing once,
// joined from every run that holds it, the earliest run's first.
class RunMerge {
 public:
  RunMerge(int fd, const std::vector<SpilledRun>& runs) : heads_(runs.size()), order_(Later{&heads_}) {
    const size_t buffer =
        std::clamp(kMergeBufferBytes / std::max<size_t>(runs.size(), 1), kSmallestRunBuffer,
                   kRunBufferBytes);
    readers_.reserve(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      readers_.emplace_back(fd, runs[i].offset, runs[i].end, buffer);
      heads_[i].left = runs[i].listings;
      advance(i);
    }
  }

  RunMerge(const RunMerge&) = delete;  // its order points at its own heads
  RunMerge& operator=(const RunMerge&) = delete;

  // False: every run is read.
  bool next(GroupListing& out) {
    if (order_.empty()) return false;
    const size_t i = order_.top();
    order_.pop();
    out = std::move(heads_[i].listing);
    // Owned: merging may move out's members, and a short path with them.
    const auto [length, partial, path, offset] = source_key(out);
    const auto key = std::make_tuple(length, partial, std::string(path), offset);
    advance(i);
    while (!order_.empty() && heads_[order_.top()].key == key) {
      const size_t j = order_.top();
      order_.pop();
      merge_members(out, heads_[j].listing);
      advance(j);
    }
    return true;
  }
  // Listings a failed read lost.
  uint64_t lost() const { return lost_; }

 private:
  struct Head {
    GroupListing listing;
    decltype(source_key(listing)) key;  // of `listing`
    uint64_t left = 0;                  // listings of the run after this one
  };
  // The run of the smallest key on top; of equal keys, the earliest run.
  struct Later {
    const std::vector<Head>* heads;
    bool operator()(size_t a, size_t b) const {
      const auto &ka = (*heads)[a].key, &kb = (*heads)[b].key;
      return ka != kb ? kb < ka : b < a;
    }
  };

  // The next listing of run i, if any, takes its place in the order.
  void advance(size_t i) {
    Head& h = heads_[i];
    if (h.left == 0) return;
    --h.left;
    if (!read_listing(readers_[i], h.listing)) {
      lost_ += h.left + 1;
      h.left = 0;
      return;
    }
    h.key = source_key(h.listing);
    order_.push(i);
  }

  std::vector<RunReader> readers_;
  std::vector<Head> heads_;
  std::priority_queue<size_t, std::vector<size_t>, Later> order_;
  uint64_t lost_ = 0;
};

}  // namespace

btrfs::Result<void> GroupListings::spill_to_disk() {
  if (file_) return {};
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/var/tmp";
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return btrfs::errno_error("a temporary file in " + dir + " for the group listing");
  std::FILE* f = ::fdopen(fd, "w+b");
  if (!f) {
    const int err = errno;
    ::close(fd);
    return btrfs::Error{err, "a temporary file in " + dir + " for the group listing"};
  }
  file_ = std::shared_ptr<std::FILE>(f, CloseFile{});
  return {};
}

btrfs::Result<void> GroupListings::add(GroupListing listing) {
  if (!file_) {
    in_memory_.push_back(std::move(listing));
    return {};
  }
  std::vector<GroupListing> one;
  one.push_back(std::move(listing));
  return write_run(one);
}

btrfs::Result<void> GroupListings::add(std::vector<GroupListing> listings) {
  if (!file_ && in_memory_.empty()) {
    in_memory_ = std::move(listings);
    return {};
  }
  if (!file_) {
    for (auto& g : listings) in_memory_.push_back(std::move(g));
    return {};
  }
  return write_run(listings);
}

btrfs::Result<void> GroupListings::write_run(std::vector<GroupListing>& listings) {
  if (listings.empty()) return {};
  using Key = decltype(source_key(listings.front()));
  std::vector<std::pair<Key, uint32_t>> order;  // each key worked out once
  order.reserve(listings.size());
  for (uint32_t i = 0; i < listings.size(); ++i) order.emplace_back(source_key(listings[i]), i);
  std::sort(order.begin(), order.end());  // equal keys stay in the order added
  std::FILE* f = file_.get();
  const off_t start = ::ftello(f);
  if (start < 0) return btrfs::errno_error("writing the group listing to its temporary file");
  std::string encoded;
  auto flush = [&] {
    const bool ok = std::fwrite(encoded.data(), 1, encoded.size(), f) == encoded.size();
    encoded.clear();
    return ok;
  };
  for (const auto& [key, i] : order) {
    encode_listing(encoded, listings[i]);
    if (encoded.size() >= kEncodeBufferBytes && !flush())
      return btrfs::errno_error("writing the group listing to its temporary file");
  }
  if (!flush()) return btrfs::errno_error("writing the group listing to its temporary file");
  runs_.push_back({static_cast<uint64_t>(start), listings.size()});
  return {};
}

btrfs::Result<void> GroupListings::for_each(
    const std::function<void(const GroupListing&)>& fn) const {
  for (const auto& g : in_memory_) fn(g);
  if (!file_ || runs_.empty()) return {};
  std::FILE* f = file_.get();
  if (std::fflush(f) != 0) return btrfs::errno_error("reading back the group listing");
  const off_t end = ::ftello(f);
  if (end < 0) return btrfs::errno_error("reading back the group listing");
  std::vector<SpilledRun> runs;
  for (size_t i = 0; i < runs_.size(); ++i)
    runs.push_back({runs_[i].offset,
                    i + 1 < runs_.size() ? runs_[i + 1].offset : static_cast<uint64_t>(end),
                    runs_[i].listings});
  RunMerge merge(fileno(f), runs);
  for (GroupListing g; merge.next(g);) fn(g);
  if (merge.lost())
    return btrfs::Error{EIO, "reading back the group listing: " +
                                 std::to_string(merge.lost()) + " groups lost"};
  return {};
}

uint64_t GroupListings::size() const {
  uint64_t spilled = 0;
  for (const auto& run : runs_) spilled += run.listings;
  return in_memory_.size() + spilled;
}

btrfs::Result<std::vector<GroupListing>> GroupListings::read_all() const {
  std::vector<GroupListing> out;
  auto ok = for_each([&](const GroupListing& g) { out.push_back(g); });
  if (!ok) return ok.error();
  return out;
}

}  // namespace btrdedupe
