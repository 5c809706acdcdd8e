#include "src/read/tree_scan.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <deque>
#include <map>
#include <memory>

#include "btrfs/fd.h"
#include "btrfs/tree_source.h"
#include "src/read/subvolume_queue_scan.h"
#include "src/read/tree_warmup.h"

namespace btrdedupe {
namespace {

// A chunk of the csum tree for a warm-up thread spans at least this many bytes of disk
// address (as a subvolume tree's spans a few leaves' worth of inode numbers,
// subvolume_inodes_range): a 16 KiB leaf of crc32c sums covers 16 MiB of data.
constexpr uint64_t kWarmupMinCsumBytes = 64ULL << 20;

// The csum tree, warmed in the background while the scan runs (ScanOptions::warm_csum_tree).
std::unique_ptr<TreeWarmup> warm_csum_tree(btrfs::TreeSource& source, const ScanOptions& options) {
  const unsigned threads = std::min(2u, options.warmup_threads);
  if (!options.warm_csum_tree || threads == 0) return nullptr;
  WarmupRange csums;
  csums.tree_id = BTRFS_CSUM_TREE_OBJECTID;
  csums.axis = WarmupRange::Axis::Offset;
  csums.objectid = BTRFS_EXTENT_CSUM_OBJECTID;
  csums.type = BTRFS_EXTENT_CSUM_KEY;
  csums.first = 0;
  csums.last = btrfs::kMaxU64;
  csums.min_chunk = kWarmupMinCsumBytes;
  return std::make_unique<TreeWarmup>(source, csums, threads, /*with_leader=*/false);
}

}  // namespace

btrfs::Result<ScanResult> scan_tree(const std::string& root, const ScanOptions& options) {
  auto fd = btrfs::Fd::open(root, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), root); !ok) return ok.error();
  // Data written but not yet flushed (delalloc) has no extent item yet: the scan would see
  // such a file without data and pass it over. Flush the filesystem first.
  ::syncfs(fd->get());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return btrfs::errno_error("stat " + root);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    return btrfs::Error{EINVAL, root + " is neither a directory nor a regular file"};
  btrfs::KernelTreeSource trees(fd->get());
  // Declared after fd and trees: stopped and joined before they go, on every return.
  const auto csum_warmup = warm_csum_tree(trees, options);

  ScanResult out;
  out.roots.push_back({root, S_ISREG(st.st_mode)});
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  out.fs = *info;
  auto subvol = btrfs::subvolume_id(fd->get());
  if (!subvol) return subvol.error();
  auto all = btrfs::list_subvolumes(root);
  if (!all) return all.error();
  if (options.excluded_subvolumes.count(*subvol)) {  // --exclude-subvol: nothing read
    ++out.excluded;
    return out;
  }
  std::deque<Work> queue{{*subvol, st.st_ino, "", PathTable::kRoot, 0}};
  if (auto ok = scan_queue(trees, std::move(queue), *all, st.st_ino, options, out); !ok)
    return ok.error();
  return out;
}

btrfs::Result<ScanResult> scan_subvolumes(const std::string& fs_path,
                                          const std::vector<SubvolumeRoot>& subvolumes,
                                          const ScanOptions& options) {
  auto fd = btrfs::Fd::open(fs_path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), fs_path); !ok) return ok.error();
  btrfs::KernelTreeSource trees(fd->get());
  const auto csum_warmup = warm_csum_tree(trees, options);
  ScanResult out;
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  out.fs = *info;
  auto all = btrfs::list_subvolumes(fs_path);
  if (!all) return all.error();
  std::deque<Work> queue;
  for (const auto& sv : subvolumes) {
    queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, "", PathTable::kRoot,
                     static_cast<uint32_t>(out.roots.size())});
    out.roots.push_back({sv.path, false});
  }
  ScanOptions flat = options;
  flat.recursive = false;
  if (auto ok = scan_queue(trees, std::move(queue), *all, 0, flat, out); !ok) return ok.error();
  return out;
}

btrfs::Result<ScanResult> merge_scans(std::vector<ScanResult> scans) {
  if (scans.empty()) return ScanResult{};
  ScanResult out = std::move(scans[0]);
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> seen;  // (subvolume, inode) -> file
  for (uint32_t i = 0; i < out.files.size(); ++i)
    seen.emplace(std::make_pair(out.files[i].subvolume, out.files[i].inode), i);
  for (size_t s = 1; s < scans.size(); ++s) {
    ScanResult& in = scans[s];
    if (in.fs.fsid != out.fs.fsid)
      return btrfs::Error{EXDEV, in.roots[0].path + " is on another filesystem than " +
                                     out.roots[0].path + ": run them separately"};
    const auto root_base = static_cast<uint32_t>(out.roots.size());
    const uint32_t node_base = out.paths.append(in.paths);
    out.roots.insert(out.roots.end(), in.roots.begin(), in.roots.end());
    std::vector<int64_t> remap(in.files.size(), -1);
    for (size_t i = 0; i < in.files.size(); ++i) {
      const auto [at, added] =
          seen.emplace(std::make_pair(in.files[i].subvolume, in.files[i].inode),
                       static_cast<uint32_t>(out.files.size()));
      // The read-only subvolumes it stands for, whichever root reached it.
      const auto& aliases = in.readonly_alias_subvolumes;
      out.readonly_alias_subvolumes.add_all(at->second, aliases, aliases.set_of(static_cast<uint32_t>(i)));
      if (!added) {
        out.files[at->second].readonly_alias |= in.files[i].readonly_alias;
        continue;
      }
      remap[i] = static_cast<int64_t>(out.files.size());
      in.files[i].root += root_base;
      if (in.files[i].path_node != PathTable::kRoot) in.files[i].path_node += node_base;
      out.files.push_back(std::move(in.files[i]));
    }
    for (auto e : in.extents) {
      if (remap[e.file] < 0) continue;
      e.file = static_cast<uint32_t>(remap[e.file]);
      out.extents.push_back(e);
    }
    for (const auto& sv : in.subvolumes)
      if (std::none_of(out.subvolumes.begin(), out.subvolumes.end(),
                       [&](const auto& o) { return o.id == sv.id; }))
        out.subvolumes.push_back(sv);
    out.passed_over.add(in.passed_over);
    out.tree_items += in.tree_items;
    out.search_calls += in.search_calls;
    out.excluded += in.excluded;
  }
  sort_by_physical_identity(out.extents);
  return out;
}

void sort_by_physical_identity(std::vector<FileExtent>& extents) {
  std::sort(extents.begin(), extents.end(), [](const FileExtent& a, const FileExtent& b) {
    return std::tie(a.disk_bytenr, a.extent_offset, a.file) <
           std::tie(b.disk_bytenr, b.extent_offset, b.file);
  });
}

SharingSummary summarize_sharing(const std::vector<FileExtent>& extents,
                                 const std::vector<ScannedFile>* files,
                                 const BatchRoles& roles) {
  const auto left_out = [&](const FileExtent& e) { return roles.left_out(e.file); };
  if (roles.size() != 0 && std::any_of(extents.begin(), extents.end(), left_out)) {  // windows only
    std::vector<FileExtent> kept;
    std::remove_copy_if(extents.begin(), extents.end(), std::back_inserter(kept), left_out);
    return summarize_sharing(kept, files, roles);
  }
  SharingSummary s;
  auto before = [&](const FileExtent& e) { return roles.counted_before(e.file); };
  auto aliased = [&](const FileExtent& e) { return files && (*files)[e.file].readonly_alias; };
  size_t i = 0;
  while (i < extents.size()) {
    const uint64_t bytenr = extents[i].disk_bytenr;
    size_t end_of_group = i;
    bool elsewhere = false, held_by_snapshots = false;
    uint64_t group_bytes = 0;
    for (; end_of_group < extents.size() && extents[end_of_group].disk_bytenr == bytenr;
         ++end_of_group) {
      elsewhere = elsewhere || before(extents[end_of_group]);
      held_by_snapshots = held_by_snapshots || aliased(extents[end_of_group]);
      group_bytes += extents[end_of_group].length;
    }
    if (end_of_group - i > 1 || held_by_snapshots) s.in_shared_extents += group_bytes;
    if (!elsewhere) {
      ++s.physical_extents;
      s.allocated_bytes += extents[i].disk_num_bytes;
    }
    uint64_t covered_end = 0;
    for (; i < end_of_group; ++i) {
      if (before(extents[i])) continue;
      const uint64_t start = extents[i].extent_offset, end = start + extents[i].length;
      s.logical_bytes += extents[i].length;
      if (!elsewhere && end > covered_end) {
        s.unique_bytes += end - std::max(start, covered_end);
        covered_end = end;
      }
    }
  }
  s.shared_bytes = s.logical_bytes - s.unique_bytes;
  return s;
}

}  // namespace btrdedupe
