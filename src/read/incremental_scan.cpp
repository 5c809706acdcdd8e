#include "src/read/incremental_scan.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <tuple>

#include "src/scope/scan_admission.h"

namespace btrdedupe {
namespace {

btrfs::Result<btrfs::Fd> open_on_btrfs(const std::string& path, btrfs::FsInfo* info) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), path); !ok) return ok.error();
  auto fs = btrfs::read_fs_info(fd->get());
  if (!fs) return fs.error();
  *info = *fs;
  return fd;
}

}  // namespace

// The one ScannedFile builder of the targeted reads: the file and its extents, appended.
ScannedFile& append_file(ScanResult& out, uint64_t subvolume, uint64_t inode,
                         const InodeState& state, uint32_t root, uint32_t path_node) {
  const auto file = static_cast<uint32_t>(out.files.size());
  ScannedFile& f = out.files.emplace_back();
  f.subvolume = subvolume;
  f.inode = inode;
  f.size = state.item.size;
  f.inode_flags = state.item.flags;
  f.parent = state.parent;
  f.set_mtime(state.item.mtime);
  f.inline_data = state.passed_over.inline_extents > 0;
  f.root = root;
  f.path_node = path_node;
  for (FileExtent e : state.extents) {
    e.file = file;
    out.extents.push_back(e);
  }
  out.passed_over.add(state.passed_over);
  return f;
}

btrfs::Result<std::unique_ptr<IncrementalScan>> IncrementalScan::of_roots(
    const std::vector<std::string>& roots, const ScanOptions& options, ScanResult& out) {
  auto s = std::make_unique<IncrementalScan>(Made{});
  s->options_ = options;
  std::vector<Place> queue;
  for (const auto& root : roots) {
    btrfs::FsInfo info;
    auto fd = open_on_btrfs(root, &info);
    if (!fd) return fd.error();
    if (out.roots.empty()) out.fs = info;
    if (info.fsid != out.fs.fsid) return std::unique_ptr<IncrementalScan>{};
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return btrfs::errno_error("stat " + root);
    if (!S_ISDIR(st.st_mode)) return std::unique_ptr<IncrementalScan>{};
    auto subvol = btrfs::subvolume_id(fd->get());
    if (!subvol) return subvol.error();
    const auto index = static_cast<uint32_t>(out.roots.size());
    out.roots.push_back({root, false});
    if (!s->fd_.valid()) {
      s->fd_ = std::move(*fd);
      s->search_through_fd();
    }
    if (options.excluded_subvolumes.count(*subvol)) {
      ++out.excluded;
      continue;
    }
    queue.push_back({*subvol, st.st_ino, "", index});
  }
  if (roots.empty()) return std::unique_ptr<IncrementalScan>{};
  auto all = btrfs::list_subvolumes(roots.front());
  if (!all) return all.error();
  s->roots_ = out.roots;
  if (auto ok = s->add_places(std::move(queue), options.recursive, *all, out); !ok)
    return ok.error();
  s->all_ = std::move(*all);
  return s;
}

btrfs::Result<std::unique_ptr<IncrementalScan>> IncrementalScan::of_subvolumes(
    const std::string& fs_path, const std::vector<SubvolumeRoot>& subvolumes,
    const ScanOptions& options, ScanResult& out) {
  auto s = std::make_unique<IncrementalScan>(Made{});
  s->options_ = options;
  auto fd = open_on_btrfs(fs_path, &out.fs);
  if (!fd) return fd.error();
  s->fd_ = std::move(*fd);
  s->search_through_fd();
  auto all = btrfs::list_subvolumes(fs_path);
  if (!all) return all.error();
  if (auto ok = s->add_subvolumes(subvolumes, *all, out); !ok) return ok.error();
  return s;
}

std::unique_ptr<IncrementalScan> IncrementalScan::of_tree_source(
    btrfs::TreeSource& trees, const std::vector<SubvolumeRoot>& subvolumes,
    const std::vector<btrfs::Subvolume>& all, const ScanOptions& options, ScanResult& out) {
  auto s = std::make_unique<IncrementalScan>(Made{});
  s->options_ = options;
  s->trees_ = &trees;
  // Not recursive: add_places searches nothing, so it cannot fail.
  (void)s->add_subvolumes(subvolumes, all, out);
  return s;
}

btrfs::Result<void> IncrementalScan::add_subvolumes(const std::vector<SubvolumeRoot>& subvolumes,
                                                    const std::vector<btrfs::Subvolume>& all,
                                                    ScanResult& out) {
  std::vector<Place> queue;
  for (const auto& sv : subvolumes) {
    queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, "", static_cast<uint32_t>(out.roots.size())});
    out.roots.push_back({sv.path, false});
  }
  roots_ = out.roots;
  if (auto ok = add_places(std::move(queue), false, all, out); !ok) return ok;
  all_ = all;
  return {};
}

void IncrementalScan::search_through_fd() {
  kernel_trees_ = std::make_unique<btrfs::KernelTreeSource>(fd_.get());
  trees_ = kernel_trees_.get();
}

btrfs::Result<void> IncrementalScan::add_places(std::vector<Place> queue, bool recursive,
                                                const std::vector<btrfs::Subvolume>& all,
                                                ScanResult& out) {
  for (size_t next = 0; next < queue.size(); ++next) {
    const Place work = queue[next];
    places_.push_back(work);
    for (const auto& sv : all) {
      if (sv.id == work.subvolume &&
          std::none_of(out.subvolumes.begin(), out.subvolumes.end(),
                       [&](const btrfs::Subvolume& o) { return o.id == sv.id; }))
        out.subvolumes.push_back(sv);
      if (!recursive || sv.parent_id != work.subvolume) continue;
      auto dir = inodes(work.subvolume).directory_below(sv.dir_id, work.top_inode);
      if (!dir) return dir.error();
      if (!*dir) continue;
      std::string rel = join_relative(work.prefix, join_relative(**dir, basename_of(sv.path)));
      if (!admits_subvolume(options_, sv.id, out.roots[work.root], rel)) {
        count_left_out(Admission::Excluded, out);
        continue;
      }
      queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, std::move(rel), work.root});
    }
  }
  return {};
}

SubvolumeInodes& IncrementalScan::inodes(uint64_t subvolume) {
  return inodes_.try_emplace(subvolume, *trees_, subvolume).first->second;
}

btrfs::Result<void> IncrementalScan::changed_inodes(
    uint64_t subvolume, uint64_t since, uint64_t until,
    const std::function<void(uint64_t inode, const btrfs::InodeItem&)>& each) {
  btrfs::SearchKey key;
  key.tree_id = subvolume;
  key.min_objectid = BTRFS_FIRST_FREE_OBJECTID;
  key.max_objectid = BTRFS_LAST_FREE_OBJECTID;
  key.min_type = key.max_type = BTRFS_INODE_ITEM_KEY;
  // The kernel skips leaves (and whole subtrees) older than this; TreeSearch then drops
  // the inode items in the leaves it returns that are older themselves (their transid).
  key.min_transid = since + 1;
  const auto cursor = trees_->search(key, 1 << 20);
  btrfs::ItemCursor& search = *cursor;
  const std::string where = "subvolume " + std::to_string(subvolume);
  for (;;) {
    auto next = search.next();
    if (!next) {
      changed_calls_ += search.ioctl_calls();
      return btrfs::Error{next.error().code, where + ": " + next.error().context};
    }
    if (!*next) break;
    ++changed_items_;
    auto item = btrfs::decode_inode_item((*next)->data);
    if (!item) return btrfs::Error{item.error().code, where + ": " + item.error().context};
    // max_transid would make the kernel skip leaves written later, and with them the
    // items of this range they also hold: filter here instead.
    if (item->transid <= until) each((*next)->objectid, *item);
  }
  changed_calls_ += search.ioctl_calls();
  return {};
}

btrfs::Result<IncrementalScan::Outcome> IncrementalScan::place(ScanResult* into,
                                                               uint64_t subvolume,
                                                               uint64_t inode,
                                                               const InodeState& state) {
  if (!state.item.is_regular() || state.parent == 0) return Outcome::OutOfScope;
  for (size_t index = 0; index < places_.size(); ++index) {
    const Place& place = places_[index];
    if (place.subvolume != subvolume) continue;
    auto dir = placed_directory(index, state.parent);
    if (!dir) return dir.error();
    if (!(*dir)->below) continue;
    const Admission admission =
        admit_file(options_, roots_[place.root], state.item.size, [&](std::string& path) {
          return path = join_relative(place.prefix, join_relative((*dir)->path, state.name)), true;
        });
    if (admission == Admission::Excluded) return Outcome::Excluded;
    if (admission == Admission::Small) return Outcome::Small;
    if (state.extents.empty()) return Outcome::NoData;
    if (!into) return Outcome::Added;
    ScanResult& out = *into;
    uint32_t path_node = PathTable::kRoot;
    if (options_.keep_paths) {
      auto& node = (*dir)->node;
      if (!node) {
        const std::string dir_path = join_relative(place.prefix, (*dir)->path);
        // a file right at the root hangs from kRoot
        node = dir_path.empty() ? PathTable::kRoot : out.paths.add(PathTable::kRoot, dir_path);
      }
      path_node = out.paths.add(*node, state.name);
    }
    append_file(out, subvolume, inode, state, place.root, path_node);
    return Outcome::Added;
  }
  return Outcome::OutOfScope;
}

btrfs::Result<IncrementalScan::PlacedDirectory*> IncrementalScan::placed_directory(size_t place,
                                                                                   uint64_t dir) {
  auto [it, fresh] = directory_nodes_.try_emplace({place, dir});
  if (fresh) {
    auto below = inodes(places_[place].subvolume).directory_below(dir, places_[place].top_inode);
    if (!below) {
      directory_nodes_.erase(it);
      return below.error();
    }
    it->second.below = below->has_value();
    if (*below) it->second.path = std::move(**below);
  }
  return &it->second;
}

std::vector<uint32_t> IncrementalScan::finish(ScanResult& out) {
  std::map<uint64_t, size_t> rank;  // subvolume -> its first place
  for (size_t i = 0; i < places_.size(); ++i) rank.emplace(places_[i].subvolume, i);
  std::vector<uint32_t> order(out.files.size());  // new position -> old index
  std::iota(order.begin(), order.end(), 0u);
  // Each file's key worked out once, not twice per comparison (a map lookup each).
  std::vector<std::tuple<uint32_t, size_t, uint64_t>> keys;
  keys.reserve(out.files.size());
  for (const auto& f : out.files) keys.emplace_back(f.root, rank[f.subvolume], f.inode);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<uint32_t> where(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) where[order[i]] = i;
  std::vector<ScannedFile> files;
  files.reserve(order.size());
  for (uint32_t old : order) files.push_back(std::move(out.files[old]));
  out.files = std::move(files);
  for (auto& e : out.extents) e.file = where[e.file];
  if (!out.readonly_alias_subvolumes.empty()) {
    FileSubvolumeSets sets;
    for (uint32_t i = 0; i < order.size(); ++i)
      sets.add_all(i, out.readonly_alias_subvolumes, out.readonly_alias_subvolumes.set_of(order[i]));
    out.readonly_alias_subvolumes = std::move(sets);
  }
  sort_by_physical_identity(out.extents);
  out.tree_items = changed_items_;
  out.search_calls = changed_calls_;
  for (const auto& [id, reader] : inodes_) {
    out.tree_items += reader.items();
    out.search_calls += reader.calls();
  }
  return order;
}

btrfs::Result<ScanResult> reread_files(btrfs::TreeSource& trees, const ScanResult& scan) {
  ScanResult out;
  out.roots = scan.roots;
  out.fs = scan.fs;
  out.subvolumes = scan.subvolumes;
  out.readonly_alias_subvolumes = scan.readonly_alias_subvolumes;
  out.files = scan.files;
  for (auto& f : out.files) f.path_node = PathTable::kRoot;
  if (auto ok = reread_in_place(trees, out, std::vector<bool>(out.files.size(), true)); !ok)
    return ok.error();
  return out;
}

btrfs::Result<void> reread_in_place(btrfs::TreeSource& trees, ScanResult& scan,
                                    const std::vector<bool>& which) {
  std::erase_if(scan.extents, [&](const FileExtent& e) { return which[e.file]; });
  std::map<uint64_t, SubvolumeInodes> readers;
  for (uint32_t i = 0; i < scan.files.size(); ++i) {
    if (!which[i]) continue;
    ScannedFile& f = scan.files[i];
    auto& reader = readers.try_emplace(f.subvolume, trees, f.subvolume).first->second;
    auto state = reader.read(f.inode, true);
    if (!state) return state.error();
    if (!*state) {  // gone since: no extents, and a state no live file has
      f.size = 0;
      f.set_mtime({-1, 0});
      continue;
    }
    const auto& it = (*state)->item;
    f.size = it.size;
    f.set_mtime(it.mtime);
    f.inode_flags = it.flags;
    f.inline_data = (*state)->passed_over.inline_extents > 0;
    for (FileExtent e : (*state)->extents) {
      e.file = i;
      scan.extents.push_back(e);
    }
  }
  for (const auto& [id, reader] : readers) {
    scan.tree_items += reader.items();
    scan.search_calls += reader.calls();
  }
  sort_by_physical_identity(scan.extents);
  return {};
}

}  // namespace btrdedupe