#include "src/group_listing.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace btrdedupe {
namespace {

// Fixed-width fields in native order: the file never outlives the process that wrote it.
template <typename T>
bool put(std::FILE* f, const T& v) {
  return std::fwrite(&v, sizeof v, 1, f) == 1;
}
template <typename T>
bool get(std::FILE* f, T& v) {
  return std::fread(&v, sizeof v, 1, f) == 1;
}

bool write_listing(std::FILE* f, const GroupListing& g) {
  bool ok = put(f, g.length) && put(f, static_cast<uint8_t>(g.whole_file)) &&
            put(f, static_cast<uint64_t>(g.members.size()));
  for (const auto& m : g.members) {
    const uint8_t roles = (m.source ? 1 : 0) | (m.destination ? 2 : 0);
    ok = ok && put(f, static_cast<uint64_t>(m.path.size())) &&
         std::fwrite(m.path.data(), 1, m.path.size(), f) == m.path.size() && put(f, m.offset) &&
         put(f, m.layout) && put(f, roles);
  }
  return ok;
}

bool read_listing(std::FILE* f, GroupListing& g) {
  uint8_t whole = 0;
  uint64_t members = 0;
  if (!get(f, g.length) || !get(f, whole) || !get(f, members)) return false;
  g.whole_file = whole != 0;
  g.members.assign(members, {});
  for (auto& m : g.members) {
    uint64_t length = 0;
    uint8_t roles = 0;
    if (!get(f, length)) return false;
    m.path.resize(length);
    if (std::fread(m.path.data(), 1, length, f) != length || !get(f, m.offset) ||
        !get(f, m.layout) || !get(f, roles))
      return false;
    m.source = roles & 1;
    m.destination = roles & 2;
  }
  return true;
}

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
  if (!write_listing(file_.get(), listing))
    return btrfs::errno_error("writing the group listing to its temporary file");
  ++spilled_;
  return {};
}

btrfs::Result<void> GroupListings::add(std::vector<GroupListing> listings) {
  if (!file_ && in_memory_.empty()) {
    in_memory_ = std::move(listings);
    return {};
  }
  for (auto& g : listings)
    if (auto ok = add(std::move(g)); !ok) return ok;
  return {};
}

btrfs::Result<void> GroupListings::for_each(
    const std::function<void(const GroupListing&)>& fn) const {
  for (const auto& g : in_memory_) fn(g);
  if (!file_ || spilled_ == 0) return {};
  std::FILE* f = file_.get();
  if (std::fflush(f) != 0 || std::fseek(f, 0, SEEK_SET) != 0)
    return btrfs::errno_error("reading back the group listing");
  GroupListing g;
  for (uint64_t i = 0; i < spilled_; ++i) {
    if (!read_listing(f, g)) {
      std::fseek(f, 0, SEEK_END);
      return btrfs::Error{EIO, "reading back the group listing: " +
                                   std::to_string(spilled_ - i) + " groups lost"};
    }
    fn(g);
  }
  std::fseek(f, 0, SEEK_END);  // later listings are appended
  return {};
}

btrfs::Result<std::vector<GroupListing>> GroupListings::read_all() const {
  std::vector<GroupListing> out;
  auto ok = for_each([&](const GroupListing& g) { out.push_back(g); });
  if (!ok) return ok.error();
  return out;
}

}  // namespace btrdedupe
