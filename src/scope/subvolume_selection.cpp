#include "src/scope/subvolume_selection.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"

namespace btrdedupe {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 20 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                    s.begin() + static_cast<std::ptrdiff_t>(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out += static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Mount points of btrfs filesystems in `mount_table` (mountinfo's text), in its order.
std::vector<std::string> btrfs_mount_points(const std::string& mount_table) {
  std::vector<std::string> out;
  std::istringstream in(mount_table);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point, word;
    if (!(fields >> id >> parent >> devno >> root >> mount_point)) continue;
    while (fields >> word && word != "-") {
    }
    std::string fstype;
    if (fields >> fstype && fstype == "btrfs") out.push_back(unescape_mountinfo(mount_point));
  }
  return out;
}

// The subvolume whose top directory `path` is, and its filesystem; ENOTDIR-like errors
// say what is wrong.
btrfs::Result<OpenedSubvolumeRoot> open_subvolume_root(const std::string& path) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), path); !ok) return ok.error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return btrfs::errno_error("stat " + path);
  if (st.st_ino != BTRFS_FIRST_FREE_OBJECTID)
    return btrfs::Error{EINVAL, path + " is not the top directory of a subvolume"};
  auto id = btrfs::subvolume_id(fd->get());
  if (!id) return id.error();
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  return OpenedSubvolumeRoot{*id, info->fsid_string()};
}

class MachineSubvolumeGround final : public SubvolumeGround {
 public:
  btrfs::Result<std::vector<btrfs::Subvolume>> subvolumes(const std::string& path) override {
    return btrfs::list_subvolumes(path);
  }
  btrfs::Result<btrfs::FsInfo> fs_info(const std::string& fs_path) override {
    auto fd = btrfs::Fd::open(fs_path, O_RDONLY | O_NONBLOCK);
    if (!fd) return fd.error();
    if (auto ok = btrfs::check_is_btrfs(fd->get(), fs_path); !ok) return ok.error();
    return btrfs::read_fs_info(fd->get());
  }
  std::string mount_table() override {
    std::ifstream in("/proc/self/mountinfo");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string real_path(const std::string& fs_path) override {
    char* real = ::realpath(fs_path.c_str(), nullptr);
    const std::string where = real ? real : fs_path;
    std::free(real);
    return where;
  }
  btrfs::Result<OpenedSubvolumeRoot> subvolume_root(const std::string& path) override {
    return open_subvolume_root(path);
  }
  btrfs::Result<ScanResult> scan(const std::string& fs_path,
                                 const std::vector<SubvolumeRoot>& subvolumes,
                                 const ScanOptions& options) override {
    return scan_subvolumes(fs_path, subvolumes, options);
  }
};

const btrfs::Subvolume* find(const std::vector<btrfs::Subvolume>& all, uint64_t id) {
  for (const auto& s : all)
    if (s.id == id) return &s;
  return nullptr;
}

std::string describe(const btrfs::Subvolume& s) {
  return "subvolume " + std::to_string(s.id) + " (" + subvolume_display_path(s) + ")";
}

// A mount point, and the subvolume whose top directory is mounted there.
struct SubvolumeMount {
  std::string point;
  const btrfs::Subvolume* subvolume;
};

// The mounts of filesystem `fsid` whose root is a subvolume's top directory, the one
// holding fs_path first (longest mount point that prefixes it).
std::vector<SubvolumeMount> subvolume_mounts(const std::string& fs_path,
                                             const std::vector<btrfs::Subvolume>& all,
                                             const std::string& fsid, SubvolumeGround& ground) {
  const std::string where = ground.real_path(fs_path);
  std::vector<SubvolumeMount> mounts;
  for (const auto& point : btrfs_mount_points(ground.mount_table())) {
    auto root = ground.subvolume_root(point);
    if (!root || root->fsid != fsid) continue;
    if (const auto* s = find(all, root->id)) mounts.push_back({point, s});
  }
  auto holds = [&](const std::string& point) {
    return where == point || point == "/" ||
           (where.size() > point.size() && where.compare(0, point.size(), point) == 0 &&
            where[point.size()] == '/');
  };
  std::stable_sort(mounts.begin(), mounts.end(), [&](const SubvolumeMount& a,
                                                     const SubvolumeMount& b) {
    const size_t la = holds(a.point) ? a.point.size() + 1 : 0;
    const size_t lb = holds(b.point) ? b.point.size() + 1 : 0;
    return la > lb;
  });
  return mounts;
}

// The path of s's top directory through mount m: its mount point when m mounts s, a path
// below it when s lies below the subvolume m mounts, else nullopt.
std::optional<std::string> path_through(const SubvolumeMount& m, const btrfs::Subvolume& s) {
  const std::string& base = m.subvolume->path;  // "" for the top level
  if (m.subvolume->id == s.id) return m.point;
  std::string below;
  if (m.subvolume->id == btrfs::kTopLevelSubvolume || base.empty()) {
    below = s.path;
  } else if (s.path.size() > base.size() && s.path.compare(0, base.size(), base) == 0 &&
             s.path[base.size()] == '/') {
    below = s.path.substr(base.size() + 1);
  } else {
    return std::nullopt;
  }
  return (m.point == "/" ? "" : m.point) + "/" + below;
}

}  // namespace

SubvolumeGround::~SubvolumeGround() = default;

SubvolumeGround& machine_subvolume_ground() {
  static MachineSubvolumeGround ground;
  return ground;
}

std::string subvolume_display_path(const btrfs::Subvolume& s) {
  return s.id == btrfs::kTopLevelSubvolume || s.path.empty() ? "<top level>" : s.path;
}

std::string snapshot_source(const btrfs::Subvolume& s, const std::vector<btrfs::Subvolume>& all) {
  if (!s.is_snapshot()) return "";
  for (const auto& o : all)
    if (o.uuid == s.parent_uuid) return subvolume_display_path(o);
  return "<deleted>";
}

btrfs::Result<uint64_t> resolve_subvolume_word(const std::string& word,
                                               const std::vector<btrfs::Subvolume>& all,
                                               const std::string& fsid,
                                               SubvolumeGround& ground) {
  if (all_digits(word)) {
    const uint64_t id = std::stoull(word);
    if (!find(all, id))
      return btrfs::Error{ENOENT, "no subvolume with id " + word + " on this filesystem"};
    return id;
  }
  auto root = ground.subvolume_root(word);
  if (!root) return root.error();
  if (root->fsid != fsid)
    return btrfs::Error{EXDEV, word + " is on another filesystem than the PATH given"};
  return root->id;
}

btrfs::Result<std::vector<SubvolumeRoot>> reachable_subvolumes(
    const std::string& fs_path, const std::vector<btrfs::Subvolume>& all,
    SubvolumeGround& ground, const std::set<uint64_t>* only) {
  auto info = ground.fs_info(fs_path);
  if (!info) return info.error();
  const std::string fsid = info->fsid_string();
  const std::vector<SubvolumeMount> mounts = subvolume_mounts(fs_path, all, fsid, ground);

  std::vector<SubvolumeRoot> out;
  for (const auto& s : all) {
    if (only && !only->count(s.id)) continue;
    for (const auto& m : mounts) {
      const std::optional<std::string> candidate = path_through(m, s);
      if (!candidate) continue;
      auto opened = ground.subvolume_root(*candidate);  // another mount may hide it
      if (opened && opened->id == s.id && opened->fsid == fsid) {
        out.push_back({s.id, *candidate});
        break;
      }
    }
  }
  return out;
}

btrfs::Result<ResolvedSelection> resolve_selection(const std::string& fs_path,
                                                   const SubvolumeSelection& selection,
                                                   SubvolumeGround& ground) {
  ResolvedSelection r;
  auto all = ground.subvolumes(fs_path);
  if (!all) return all.error();
  r.all = std::move(*all);
  auto info = ground.fs_info(fs_path);
  if (!info) return info.error();
  const std::string fsid = info->fsid_string();

  for (const auto& word : selection.exclude) {
    auto id = resolve_subvolume_word(word, r.all, fsid, ground);
    if (!id) return btrfs::Error{id.error().code, "--exclude-subvol " + word + ": " + id.error().message()};
    r.excluded.insert(*id);
  }
  if (!selection.flat()) return r;

  std::set<uint64_t> chosen;
  if (selection.all) {
    for (const auto& s : r.all) chosen.insert(s.id);
  }
  for (const auto& word : selection.include) {
    auto id = resolve_subvolume_word(word, r.all, fsid, ground);
    if (!id) return btrfs::Error{id.error().code, "--subvol " + word + ": " + id.error().message()};
    chosen.insert(*id);
    r.included.push_back(*id);
  }
  for (uint64_t id : r.excluded) chosen.erase(id);

  auto reachable = reachable_subvolumes(fs_path, r.all, ground, &chosen);
  if (!reachable) return reachable.error();
  std::vector<SubvolumeRoot> writable, readonly;
  for (uint64_t id : chosen) {
    const btrfs::Subvolume* s = find(r.all, id);
    auto at = std::find_if(reachable->begin(), reachable->end(),
                           [&](const SubvolumeRoot& root) { return root.id == id; });
    if (at == reachable->end()) {
      const std::string why = describe(*s) +
                              " is not reachable through any mount of the filesystem (mount "
                              "its parent, or the top level with -o subvolid=5)";
      // Asked for by name: an error. Part of --all-subvols: left out, said once.
      const bool named = std::count(r.included.begin(), r.included.end(), id) > 0;
      (named ? r.errors : r.notes).push_back(why + (named ? "" : ": left out"));
      continue;
    }
    (s->readonly ? readonly : writable).push_back(*at);
  }
  // Writable subvolumes first: a read-only snapshot's files then fold into the files they
  // were taken from (tree_scan.h), instead of the other way round.
  r.roots = std::move(writable);
  r.roots.insert(r.roots.end(), readonly.begin(), readonly.end());
  return r;
}

}  // namespace btrdedupe
