#include "src/incremental_scan.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <tuple>

#include "btrfs/tree_search.h"

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
  std::unique_ptr<IncrementalScan> s(new IncrementalScan());  // private constructor
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
    if (!s->fd_.valid()) s->fd_ = std::move(*fd);
    if (options.excluded_subvolumes.count(*subvol)) {
      ++out.excluded;
      continue;
    }
    queue.push_back({*subvol, st.st_ino, "", index});
  }
  if (roots.empty()) return std::unique_ptr<IncrementalScan>{};
  auto all = btrfs::list_subvolumes(roots.front());
  if (!all) return all.error();
  for (const auto& r : out.roots) s->roots_.push_back(r.path);
  if (auto ok = s->add_places(std::move(queue), options.recursive, *all, out); !ok)
    return ok.error();
  return s;
}

btrfs::Result<std::unique_ptr<IncrementalScan>> IncrementalScan::of_subvolumes(
    const std::string& fs_path, const std::vector<SubvolumeRoot>& subvolumes,
    const ScanOptions& options, ScanResult& out) {
  std::unique_ptr<IncrementalScan> s(new IncrementalScan());
  s->options_ = options;
  auto fd = open_on_btrfs(fs_path, &out.fs);
  if (!fd) return fd.error();
  s->fd_ = std::move(*fd);
  std::vector<Place> queue;
  for (const auto& sv : subvolumes) {
    queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, "", static_cast<uint32_t>(out.roots.size())});
    out.roots.push_back({sv.path, false});
  }
  auto all = btrfs::list_subvolumes(fs_path);
  if (!all) return all.error();
  for (const auto& r : out.roots) s->roots_.push_back(r.path);
  if (auto ok = s->add_places(std::move(queue), false, *all, out); !ok) return ok.error();
  return s;
}

btrfs::Result<void> IncrementalScan::add_places(std::vector<Place> queue, bool recursive,
                                                const std::vector<btrfs::Subvolume>& all,
                                                ScanResult& out) {
  for (size_t next = 0; next < queue.size(); ++next) {
    const Place work = queue[next];
    places_.push_back(work);
    const std::string& root = out.roots[work.root].path;
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
      if (options_.excluded_subvolumes.count(sv.id) ||
          (options_.exclude && options_.exclude(root, rel))) {
        ++out.excluded;
        continue;
      }
      queue.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, std::move(rel), work.root});
    }
  }
  return {};
}

SubvolumeInodes& IncrementalScan::inodes(uint64_t subvolume) {
  return inodes_.try_emplace(subvolume, fd_.get(), subvolume).first->second;
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
  btrfs::TreeSearch search(fd_.get(), key, 1 << 20);
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
    auto dir = inodes(subvolume).directory_below(state.parent, place.top_inode);
    if (!dir) return dir.error();
    if (!*dir) continue;
    const std::string rel = join_relative(place.prefix, join_relative(**dir, state.name));
    if (options_.exclude && options_.exclude(roots_[place.root], rel)) return Outcome::OutOfScope;
    if (state.item.size < options_.min_file_size) return Outcome::OutOfScope;
    if (state.extents.empty()) return Outcome::NoData;
    if (!into) return Outcome::Added;
    ScanResult& out = *into;
    uint32_t path_node = PathTable::kRoot;
    if (options_.keep_paths) {
      // Each directory's path once per scan result, its files' names below it.
      auto node = directory_nodes_.try_emplace({index, state.parent}, PathTable::kRoot);
      if (node.second) {
        const std::string dir_path = join_relative(place.prefix, **dir);
        if (!dir_path.empty())  // a file right at the root hangs from kRoot
          node.first->second = out.paths.add(PathTable::kRoot, dir_path);
      }
      path_node = out.paths.add(node.first->second, state.name);
    }
    append_file(out, subvolume, inode, state, place.root, path_node);
    return Outcome::Added;
  }
  return Outcome::OutOfScope;
}

btrfs::Result<std::optional<std::string>> IncrementalScan::top_directory(uint64_t subvolume) {
  for (const Place& place : places_) {
    if (place.subvolume != subvolume) continue;
    char* real = ::realpath(roots_[place.root].c_str(), nullptr);
    if (!real) continue;
    std::string path = real;
    std::free(real);
    if (place.top_inode == BTRFS_FIRST_FREE_OBJECTID) {
      if (!place.prefix.empty()) path += "/" + place.prefix;
    } else {
      // A root inside the subvolume: its path ends with the root's path below the top.
      auto below = inodes(subvolume).directory_below(place.top_inode, BTRFS_FIRST_FREE_OBJECTID);
      if (!below) return below.error();
      if (!*below || (*below)->empty()) continue;
      const std::string tail = "/" + **below;
      if (path.size() < tail.size() || path.compare(path.size() - tail.size(), tail.size(), tail))
        continue;
      path.resize(path.size() - tail.size());
      if (path.empty()) path = "/";
    }
    // Proven, not guessed: the subvolume's top directory itself (not a bind mount's look-alike).
    auto fd = btrfs::Fd::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
    if (!fd) continue;
    struct stat st {};
    auto id = btrfs::subvolume_id(fd->get());
    if (::fstat(fd->get(), &st) != 0 || st.st_ino != BTRFS_FIRST_FREE_OBJECTID || !id ||
        *id != subvolume)
      continue;
    return std::optional<std::string>{path};
  }
  return std::optional<std::string>{};
}

btrfs::Result<IncrementalScan::Outcome> IncrementalScan::add_outside(ScanResult& out,
                                                                     uint64_t subvolume,
                                                                     uint64_t inode,
                                                                     const InodeState& state) {
  if (!state.item.is_regular() || state.parent == 0) return Outcome::OutOfScope;
  if (state.item.size < options_.min_file_size) return Outcome::OutOfScope;
  auto root = outside_roots_.find(subvolume);
  if (root == outside_roots_.end()) {
    auto top = top_directory(subvolume);
    if (!top) return top.error();
    std::optional<uint32_t> index;
    if (*top) {
      index = static_cast<uint32_t>(out.roots.size());
      out.roots.push_back({**top, false});
    }
    root = outside_roots_.emplace(subvolume, index).first;
  }
  if (!root->second) return Outcome::OutOfScope;
  auto dir = inodes(subvolume).directory_below(state.parent, BTRFS_FIRST_FREE_OBJECTID);
  if (!dir) return dir.error();
  if (!*dir) return Outcome::OutOfScope;
  if (state.extents.empty()) return Outcome::NoData;
  append_file(out, subvolume, inode, state, *root->second,
              out.paths.add(PathTable::kRoot, join_relative(**dir, state.name)))
      .outside_roots = true;
  return Outcome::Added;
}

btrfs::Result<bool> IncrementalScan::read_window(ScanResult& out, size_t max_files) {
  directory_nodes_.clear();  // a new window has its own path table
  if (!family_) family_.emplace(options_.fold_readonly_aliases ? out.subvolumes
                                                               : std::vector<btrfs::Subvolume>{});
  for (; window_place_ < places_.size(); ++window_place_, window_next_ = 0) {
    const uint64_t subvolume = places_[window_place_].subvolume;
    // A subvolume reached by two places is read once (place() puts a file under the first).
    bool earlier = false;
    for (size_t i = 0; i < window_place_; ++i) earlier = earlier || places_[i].subvolume == subvolume;
    if (earlier) continue;
    // Read in chunks of the room left: files folded or out of scope take none of it.
    do {
      Chunk chunk;
      // Bounded too when the window is not (a side run reads its roots in one).
      constexpr size_t kChunkFiles = 16384;
      const size_t room = std::min(kChunkFiles, max_files - std::min(max_files, out.files.size()));
      auto next = inodes(subvolume).read_from(window_next_, [&](uint64_t inode, InodeState& state) {
        if (state.item.is_regular()) chunk.emplace_back(inode, std::move(state));
        return chunk.size() < room;
      });
      if (!next) return next.error();
      if (auto ok = add_chunk(out, subvolume, chunk); !ok) return ok.error();
      window_next_ = *next;
    } while (window_next_ != 0 && out.files.size() < max_files);
    if (window_next_ != 0) return true;  // the window is full
    if (out.files.size() >= max_files) {
      ++window_place_;
      window_next_ = 0;
      return window_place_ < places_.size();
    }
  }
  return false;
}

bool IncrementalScan::window_passed(uint64_t subvolume, uint64_t inode) const {
  for (size_t i = 0; i < places_.size(); ++i) {
    if (places_[i].subvolume != subvolume) continue;  // read at its first place
    if (i != window_place_) return i < window_place_;
    return window_next_ != 0 && inode < window_next_;
  }
  return true;
}

btrfs::Result<void> IncrementalScan::add_chunk(
    ScanResult& out, uint64_t subvolume, Chunk& chunk) {
  std::vector<bool> folded(chunk.size(), false);
  chunk_files_.assign(chunk.size(), kNotAdded);
  if (auto ok = fold_chunk(out, subvolume, chunk, folded); !ok) return ok;
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (folded[i]) continue;
    auto added = place(&out, subvolume, chunk[i].first, chunk[i].second);
    if (!added) return added.error();
    if (*added == Outcome::Added) chunk_files_[i] = static_cast<uint32_t>(out.files.size() - 1);
    // Inline, hole-only and prealloc-only files count as the whole scan counts them.
    if (*added == Outcome::NoData) {
      out.passed_over.add(chunk[i].second.passed_over);
      ++out.files_without_extents;
    }
  }
  return mark_aliases(out, subvolume, chunk);
}

// A read-only snapshot's file folds into the first subvolume of folds_into() whose file of
// the same inode maps the same extents and is in scope, as the whole scan's layout index
// would fold it; one with no extent at all is passed over likewise.
btrfs::Result<void> IncrementalScan::fold_chunk(
    ScanResult& out, uint64_t subvolume,
    const Chunk& chunk, std::vector<bool>& folded) {
  const auto& into = family_->folds_into(subvolume);
  if (into.empty()) return {};
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (!chunk[i].second.extents.empty()) continue;
    auto outcome = check(subvolume, chunk[i].second);
    if (!outcome) return outcome.error();
    if (*outcome != Outcome::NoData) continue;
    folded[i] = true;
    ++out.passed_over.readonly_aliases;
    out.passed_over.add(chunk[i].second.passed_over);
  }
  for (uint64_t twin : into) {
    std::vector<uint64_t> open;  // inodes not folded yet, ascending as the chunk is
    std::vector<size_t> at;
    for (size_t i = 0; i < chunk.size(); ++i)
      if (!folded[i]) open.push_back(chunk[i].first), at.push_back(i);
    if (open.empty()) break;
    size_t next = 0;
    auto read = read_each(twin, open, [&](uint64_t inode, const InodeState* state) -> btrfs::Result<void> {
      while (next < open.size() && open[next] < inode) ++next;
      const size_t i = at[next++];
      if (!state || !same_layout(chunk[i].second, *state)) return {};
      auto outcome = check(twin, *state);
      if (!outcome) return outcome.error();
      if (*outcome == Outcome::Added) folded[i] = true, ++out.passed_over.readonly_aliases;
      return {};
    });
    if (!read) return read;
  }
  return {};
}

// The files of the chunk that read-only snapshots fold into (their origin's, or a kept
// snapshot file later snapshots still hold) say so: their extents stay referenced.
btrfs::Result<void> IncrementalScan::mark_aliases(
    ScanResult& out, uint64_t subvolume,
    const Chunk& chunk) {
  std::vector<uint64_t> kept;
  std::vector<size_t> at;
  for (size_t i = 0; i < chunk.size(); ++i)
    if (chunk_files_[i] != kNotAdded) kept.push_back(chunk[i].first), at.push_back(i);
  if (kept.empty()) return {};
  for (uint64_t snap : family_->folded_into(subvolume)) {
    // Earlier choices of folds_into(snap) were refused already when this file is kept
    // (or this is the origin, the first choice): the same layout here is where it folds.
    size_t next = 0;
    auto read = read_each(snap, kept, [&](uint64_t inode, const InodeState* state) -> btrfs::Result<void> {
      while (next < kept.size() && kept[next] < inode) ++next;
      const size_t i = at[next++];
      if (!state || !same_layout(chunk[i].second, *state)) return {};
      const uint32_t file = chunk_files_[i];
      out.files[file].readonly_alias = true;
      out.readonly_alias_subvolumes.add(file, snap);
      return {};
    });
    if (!read) return read;
  }
  return {};
}

namespace {

// The highest objectid holding an item in the subvolume's tree (0 when empty or on error):
// about 64 single-item probes, most on cached nodes.
uint64_t highest_objectid(int fd, uint64_t subvolume) {
  auto first_at = [&](uint64_t x) -> std::optional<uint64_t> {
    btrfs::SearchKey key;
    key.tree_id = subvolume;
    key.min_objectid = x;
    key.max_objectid = btrfs::kMaxU64 - 1;  // objectids just below: the free space cache
    auto k = btrfs::first_item_key(fd, key);
    if (!k || !*k) return std::nullopt;
    return (*k)->objectid;
  };
  const auto lo = first_at(0);
  if (!lo) return 0;
  uint64_t a = *lo, b = btrfs::kMaxU64 - 256;  // objectids past -256 are reserved ones
  while (a < b) {
    const uint64_t mid = a + (b - a) / 2 + 1;
    if (const auto x = first_at(mid); x && *x <= b) {
      a = *x;
    } else {
      b = mid - 1;
    }
  }
  return a;
}

}  // namespace

double IncrementalScan::read_fraction() {
  if (places_.empty() || window_place_ >= places_.size()) return 1.0;
  const uint64_t subvolume = places_[window_place_].subvolume;
  auto it = highest_inode_.find(subvolume);
  if (it == highest_inode_.end())
    it = highest_inode_.emplace(subvolume, highest_objectid(fd_.get(), subvolume)).first;
  constexpr uint64_t kFirstInode = 256;  // BTRFS_FIRST_FREE_OBJECTID
  double within = 0;
  if (it->second > kFirstInode && window_next_ > kFirstInode)
    within = std::min(1.0, static_cast<double>(window_next_ - kFirstInode) /
                               static_cast<double>(it->second - kFirstInode));
  return (static_cast<double>(window_place_) + within) / static_cast<double>(places_.size());
}

std::vector<uint32_t> IncrementalScan::finish(ScanResult& out) {
  std::map<uint64_t, size_t> rank;  // subvolume -> its first place
  for (size_t i = 0; i < places_.size(); ++i) rank.emplace(places_[i].subvolume, i);
  std::vector<uint32_t> order(out.files.size());  // new position -> old index
  std::iota(order.begin(), order.end(), 0u);
  auto key = [&](uint32_t i) {
    const auto& f = out.files[i];
    return std::make_tuple(f.root, rank[f.subvolume], f.inode);
  };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
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

btrfs::Result<ScanResult> reread_files(int fd, const ScanResult& scan) {
  ScanResult out;
  out.roots = scan.roots;
  out.fs = scan.fs;
  out.subvolumes = scan.subvolumes;
  out.readonly_alias_subvolumes = scan.readonly_alias_subvolumes;
  out.files = scan.files;
  for (auto& f : out.files) f.path_node = PathTable::kRoot;
  if (auto ok = reread_in_place(fd, out, std::vector<bool>(out.files.size(), true)); !ok)
    return ok.error();
  return out;
}

btrfs::Result<void> reread_in_place(int fd, ScanResult& scan, const std::vector<bool>& which) {
  std::erase_if(scan.extents, [&](const FileExtent& e) { return which[e.file]; });
  std::map<uint64_t, SubvolumeInodes> readers;
  for (uint32_t i = 0; i < scan.files.size(); ++i) {
    if (!which[i]) continue;
    ScannedFile& f = scan.files[i];
    auto& reader = readers.try_emplace(f.subvolume, fd, f.subvolume).first->second;
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
