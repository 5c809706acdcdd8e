// A made-up machine for the subvolume ground (src/scope/subvolume_selection.h): btrfs
// filesystems, each a subvolume list, and the mounts that show them, answered as the kernel
// answers. A path is resolved through the last mount on the longest mount point holding
// it; it is a subvolume's top directory when its place in the filesystem is that
// subvolume's path (or it is a mount point showing a subvolume's top). The mount table is
// written as /proc/self/mountinfo writes it (proc(5)), escapes included.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "btrfs/fs_info.h"
#include "btrfs/subvolume.h"
#include "src/scope/subvolume_selection.h"

namespace btrdedupe::test {

class MadeUpMounts final : public SubvolumeGround {
 public:
  struct Mount {
    std::string point;        // absolute, no trailing slash ("/" for the root)
    std::string fsid;         // of a filesystem added (btrfs); "" for another type
    uint64_t subvolume = btrfs::kTopLevelSubvolume;  // the subvolume it shows
    std::string below;        // the directory of that subvolume it shows ("": its top)
    std::string fstype = "btrfs";
  };

  // A btrfs filesystem numbered `n` (its fsid's first byte): its fsid string.
  std::string add_filesystem(uint8_t n, std::vector<btrfs::Subvolume> subvolumes) {
    btrfs::FsInfo fs;
    fs.fsid[0] = n;
    fs.fsid[15] = 0xfe;
    const std::string fsid = fs.fsid_string();
    filesystems_[fsid] = {fs, std::move(subvolumes)};
    return fsid;
  }
  // Filesystem `fsid`'s subvolume, or its directory `below`, mounted at `point`.
  void mount(const std::string& point, const std::string& fsid, uint64_t subvolume,
             const std::string& below = "") {
    mounts_.push_back({point, fsid, subvolume, below, "btrfs"});
  }
  void mount_other(const std::string& point, const std::string& fstype) {
    mounts_.push_back({point, "", 0, "", fstype});
  }

  std::string cwd = "/";                        // relative paths are resolved from here
  std::map<std::string, std::string> symlinks;  // a symlink's path -> its target (absolute)
  std::string list_error;                       // subvolumes() fails so when set
  std::vector<std::string> proved;              // every path subvolume_root was asked of
  // The scan: what it answers, and what it was asked.
  ScanResult scan_answer;
  std::string scan_error;  // the scan fails so when set
  std::string scanned_at;
  std::vector<SubvolumeRoot> scanned;
  ScanOptions scanned_with;

  btrfs::Result<std::vector<btrfs::Subvolume>> subvolumes(const std::string& path) override {
    if (!list_error.empty()) return btrfs::Error{EPERM, list_error};
    auto fs = filesystem_of(path);
    if (!fs) return fs.error();
    return (*fs)->subvolumes;
  }
  btrfs::Result<btrfs::FsInfo> fs_info(const std::string& path) override {
    auto fs = filesystem_of(path);
    if (!fs) return fs.error();
    return (*fs)->info;
  }
  std::string mount_table() override {
    std::string text =
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        "short line\n";  // not a mount: skipped
    int id = 30;
    for (const auto& m : mounts_) {
      std::string root = "/";
      if (!m.fsid.empty()) root += join(subvolume(m)->path, m.below);
      text += std::to_string(id) + " 1 0:" + std::to_string(id + 10) + " " + escaped(root) + " " +
              escaped(m.point) + " rw,relatime" + (id % 2 ? " shared:" + std::to_string(id) : "") +
              " - " + m.fstype + " /dev/made-up rw\n";
      ++id;
    }
    return text;
  }
  std::string real_path(const std::string& path) override {
    std::string p = absolute(path);
    for (const auto& [link, target] : symlinks)
      if (p == link || p.rfind(link + "/", 0) == 0) p = target + p.substr(link.size());
    return p;
  }
  btrfs::Result<OpenedSubvolumeRoot> subvolume_root(const std::string& path) override {
    proved.push_back(path);
    auto place = place_of(path);
    if (!place) return place.error();
    const std::string inside = join(place->mount->below, place->rest);
    const Filesystem& fs = filesystems_.at(place->mount->fsid);
    const std::string at = join(subvolume(*place->mount)->path, inside);
    for (const auto& s : fs.subvolumes)
      if ((inside.empty() && s.id == place->mount->subvolume) || (!inside.empty() && s.path == at))
        return OpenedSubvolumeRoot{s.id, place->mount->fsid};
    return btrfs::Error{EINVAL, path + " is not the top directory of a subvolume"};
  }
  btrfs::Result<ScanResult> scan(const std::string& fs_path,
                                 const std::vector<SubvolumeRoot>& subvolumes,
                                 const ScanOptions& options) override {
    scanned_at = fs_path;
    scanned = subvolumes;
    scanned_with = options;
    if (!scan_error.empty()) return btrfs::Error{EIO, scan_error};
    return scan_answer;
  }

 private:
  struct Filesystem {
    btrfs::FsInfo info;
    std::vector<btrfs::Subvolume> subvolumes;
  };
  struct Place {
    const Mount* mount;
    std::string rest;  // below the mount point, "" for the point itself
  };

  static std::string join(const std::string& a, const std::string& b) {
    return a.empty() ? b : b.empty() ? a : a + "/" + b;
  }
  // As proc(5): space, tab, newline and backslash as \ooo.
  static std::string escaped(const std::string& s) {
    static const char* octal = "01234567";
    std::string out;
    for (unsigned char c : s) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\\')
        out += {'\\', octal[c >> 6], octal[(c >> 3) & 7], octal[c & 7]};
      else
        out += static_cast<char>(c);
    }
    return out;
  }
  // `path` from cwd, without ".", ".." or repeated slashes.
  std::string absolute(const std::string& path) const {
    const std::string whole = path.empty() || path[0] != '/' ? cwd + "/" + path : path;
    std::vector<std::string> parts;
    size_t at = 0;
    while (at <= whole.size()) {
      size_t end = whole.find('/', at);
      if (end == std::string::npos) end = whole.size();
      const std::string part = whole.substr(at, end - at);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      at = end + 1;
    }
    std::string out;
    for (const auto& part : parts) out += "/" + part;
    return out.empty() ? "/" : out;
  }
  const btrfs::Subvolume* subvolume(const Mount& m) const {
    for (const auto& s : filesystems_.at(m.fsid).subvolumes)
      if (s.id == m.subvolume) return &s;
    return nullptr;
  }
  // The mount `path` is reached through (symlinks followed), and the rest of the path.
  btrfs::Result<Place> place_of(const std::string& path) {
    const std::string p = real_path(path);
    const Mount* best = nullptr;
    for (const auto& m : mounts_)
      if ((p == m.point || m.point == "/" || p.rfind(m.point + "/", 0) == 0) &&
          (!best || m.point.size() >= best->point.size()))
        best = &m;
    if (!best) return btrfs::Error{ENOENT, path + ": no such file or directory"};
    if (best->fsid.empty()) return btrfs::Error{0, path + " is on " + best->fstype + ", not btrfs"};
    const size_t skip = best->point == "/" ? 1 : best->point.size() + 1;
    const std::string rest = p == best->point ? "" : p.substr(skip);
    return Place{best, rest};
  }
  btrfs::Result<const Filesystem*> filesystem_of(const std::string& path) {
    auto place = place_of(path);
    if (!place) return place.error();
    return &filesystems_.at(place->mount->fsid);
  }

  std::map<std::string, Filesystem> filesystems_;
  std::vector<Mount> mounts_;
};

}  // namespace btrdedupe::test
