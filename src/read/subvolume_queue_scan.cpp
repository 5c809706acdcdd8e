// The tree scan's walk over queued subvolumes; why this is apart from the scan's entry
// points and from the read of one tree: src/read/subvolume_queue_scan.h.
#include "src/read/subvolume_queue_scan.h"

#include <linux/btrfs_tree.h>

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "src/run/heap_release.h"
#include "src/read/layout_index.h"
#include "src/scope/scan_admission.h"
#include "src/read/subvolume_tree_paths.h"
#include "src/read/subvolume_tree_reader.h"

namespace btrdedupe {
namespace {

// Whether the scan may reach a read-only subvolume: a queued one, or with recursion one
// nested (at any depth) below a queued one. A superset is fine: it only costs memory.
bool may_read_readonly(const std::deque<Work>& queue, const std::vector<btrfs::Subvolume>& all,
                       bool recursive) {
  std::unordered_map<uint64_t, uint64_t> parent_of;
  for (const auto& s : all) parent_of[s.id] = s.parent_id;
  std::set<uint64_t> queued;
  for (const auto& w : queue) queued.insert(w.subvol);
  for (const auto& s : all) {
    if (!s.readonly) continue;
    uint64_t id = s.id;
    for (size_t depth = 0; id != 0 && depth <= all.size(); ++depth) {
      if (queued.count(id)) return true;
      if (!recursive) break;
      auto up = parent_of.find(id);
      id = up == parent_of.end() ? 0 : up->second;
    }
  }
  return false;
}

// scan_queue's walk: what lasts from one queued subvolume to the next.
class QueueScan {
 public:
  QueueScan(btrfs::TreeSource& trees, std::deque<Work> queue, const std::vector<btrfs::Subvolume>& all,
            uint64_t file_inode, const ScanOptions& options, ScanResult& out)
      : trees_(trees), queue_(std::move(queue)), all_(all), file_inode_(file_inode),
        options_(options), out_(out),
        // The layout index costs a hash entry per file (5 MB for 100k files): only worth it
        // when the scan may reach a read-only subvolume to fold, not for any on the
        // filesystem.
        may_fold_(options.fold_readonly_aliases &&
                  may_read_readonly(queue_, all, options.recursive)),
        table_(options.keep_paths ? out.paths : scratch_) {}

  btrfs::Result<void> run() {
    while (!queue_.empty()) {
      const Work work = queue_.front();
      queue_.pop_front();
      if (auto ok = read_subvolume(work); !ok) return ok;
    }
    sort_by_physical_identity(out_.extents);
    out_.files.shrink_to_fit();  // vectors grew by doubling: give the slack back
    out_.extents.shrink_to_fit();
    out_.paths.shrink_to_fit();
    return {};
  }

 private:
  static constexpr uint32_t kDropped = UINT32_MAX;

  btrfs::Result<void> read_subvolume(const Work& work) {
    const bool root_is_file = out_.roots[work.root].is_file;
    const size_t first_file = out_.files.size(), first_extent = out_.extents.size();
    const bool readonly = std::any_of(all_.begin(), all_.end(), [&](const btrfs::Subvolume& s) {
      return s.id == work.subvol && s.readonly;
    });
    // A read-only subvolume read whole drops its copies of files already scanned as they
    // are read: k snapshots then cost no more memory than one. (Excludes and a root inside
    // the subvolume need every file's path first: those fold after the read, below.)
    DropFile drop;
    if (may_fold_ && readonly && !root_is_file && !options_.exclude &&
        work.top_inode == BTRFS_FIRST_FREE_OBJECTID)
      drop = drop_known_layouts(work.subvol);
    auto tree = read_subvolume_tree(trees_, work.subvol, out_,
                                    options_.keep_paths || options_.exclude,
                                    options_.warmup_threads, options_.max_files, drop);
    if (!tree) return tree.error();
    queue_nested(work, *tree);
    keep_files(work, *tree, first_extent);
    if (may_fold_) layouts_.add(out_, first_file, first_extent, readonly);
    name_files(work, *tree, first_file);
    return {};
  }

  // For a read-only subvolume's file with the layout of a file already scanned.
  DropFile drop_known_layouts(uint64_t subvol) {
    return [this, subvol](const PendingFile& e, const FileExtent* first, const FileExtent* end) {
      // Unnamed (an orphan) is not below the root; too small is counted as such below.
      if (e.parent == 0 || e.size < options_.min_file_size) return false;
      std::optional<uint32_t> twin;
      if (first != end) {
        twin = layouts_.find(e.size, e.flags, first, end);
        if (!twin) return false;
        out_.files[*twin].readonly_alias = true;
        out_.readonly_alias_subvolumes.add(*twin, subvol);
      }
      ++out_.passed_over.readonly_aliases;  // a file with no extent: nothing to keep
      return true;
    };
  }

  // Records the subvolume and, with options.recursive, queues those nested below the root.
  void queue_nested(const Work& work, const SubvolumeTree& tree) {
    const bool root_is_file = out_.roots[work.root].is_file;
    for (const auto& sv : all_) {
      if (sv.id == work.subvol) out_.subvolumes.push_back(sv);
      if (!options_.recursive || sv.parent_id != work.subvol || root_is_file) continue;
      std::string dir;
      if (!path_below(tree, sv.dir_id, work.top_inode, &dir)) continue;
      const std::string below = join_relative(dir, basename_of(sv.path));
      std::string rel = join_relative(work.prefix, below);
      if (!admits_subvolume(options_, sv.id, out_.roots[work.root], rel)) {
        count_left_out(Admission::Excluded, out_);
        continue;
      }
      const uint32_t node = table_.add(work.prefix_node, below);
      queue_.push_back({sv.id, BTRFS_FIRST_FREE_OBJECTID, std::move(rel), node, work.root});
    }
  }

  // Moves the kept files of `tree`, in inode order, and their extents into out_.
  void keep_files(const Work& work, SubvolumeTree& tree, size_t first_extent) {
    // FileExtent::file maps tree files to the kept ones below.
    std::vector<uint32_t> file_of(tree.files.size(), kDropped);
    const size_t kept = select_files(work, tree, file_of);
    move_files(work, tree, file_of, kept);
    size_t w = first_extent;
    for (size_t e = first_extent; e < out_.extents.size(); ++e) {
      const uint32_t file = file_of[out_.extents[e].file];
      if (file == kDropped) continue;
      out_.extents[w] = out_.extents[e];
      out_.extents[w++].file = file;
    }
    out_.extents.resize(w);
    for (const auto& piece : tree.passed) {
      if (file_of[piece.file] == kDropped) continue;
      count_passed_over(piece, out_.passed_over);
      if (piece.type == btrfs::FileExtentType::Inline)
        out_.files[file_of[piece.file]].inline_data = true;
    }
    free_storage(file_of);
  }

  // Marks the files that stay (0 in `file_of`) and returns how many.
  size_t select_files(const Work& work, const SubvolumeTree& tree,
                      std::vector<uint32_t>& file_of) {
    const bool root_is_file = out_.roots[work.root].is_file;
    Membership membership(tree, work.top_inode);
    std::string rel;
    size_t kept = 0;
    for (size_t i = 0; i < tree.files.size(); ++i) {
      const PendingFile& file = tree.files[i];
      if (root_is_file) {
        if (file.ino != file_inode_) continue;
      } else if (file.parent == 0 || !membership.below(file.parent)) {
        continue;
      }
      const Admission admission =
          admit_file(options_, out_.roots[work.root], file.size, [&](std::string& path) {
            if (!file_path_below(tree, i, work.top_inode, &rel)) return false;
            path = join_relative(work.prefix, rel);
            return true;
          });
      if (admission != Admission::Taken) {
        count_left_out(admission, out_);
        continue;
      }
      file_of[i] = 0;
      ++kept;
    }
    return kept;
  }

  // The marked files become ScannedFiles; `file_of` then holds their index in out_.files.
  void move_files(const Work& work, SubvolumeTree& tree, std::vector<uint32_t>& file_of,
                  size_t kept) {
    // Exactly the room needed: files are the largest vector the scan result holds. Pending
    // files are freed as they move over, so their room is free again for the path table.
    out_.files.reserve(out_.files.size() + kept);
    for (size_t i = 0; !tree.files.empty(); ++i) {
      const PendingFile pending = tree.files.front();
      tree.files.pop_front();
      if (file_of[i] == kDropped) continue;
      file_of[i] = static_cast<uint32_t>(out_.files.size());
      // path_node holds the tree's file index until the names of the files that stay are added.
      ScannedFile f;
      f.subvolume = work.subvol;
      f.inode = pending.ino;
      f.size = pending.size;
      f.inode_flags = pending.flags;
      f.parent = pending.parent;
      f.set_mtime(pending.mtime());
      f.root = work.root;
      f.path_node = static_cast<uint32_t>(i);
      out_.files.push_back(f);
    }
    free_storage(tree.files);
  }

  // Names only for the files that stayed: a folded snapshot's files leave none behind.
  // Without keep_paths none at all: a table built to be dropped cost ~4 MB at the peak of
  // a run that dedupes (its confirmation scan).
  void name_files(const Work& work, const SubvolumeTree& tree, size_t first_file) {
    if (!options_.keep_paths || out_.roots[work.root].is_file) {
      for (size_t f = first_file; f < out_.files.size(); ++f)
        out_.files[f].path_node = PathTable::kRoot;
      return;
    }
    PathBuilder names(tree, work.top_inode, work.prefix_node, table_);
    for (size_t f = first_file; f < out_.files.size(); ++f) {
      ScannedFile& file = out_.files[f];
      file.path_node = names.file_node(file.path_node, file.parent);
    }
  }

  btrfs::TreeSource& trees_;
  std::deque<Work> queue_;
  const std::vector<btrfs::Subvolume>& all_;
  const uint64_t file_inode_;
  const ScanOptions& options_;
  ScanResult& out_;
  const bool may_fold_;
  LayoutIndex layouts_;
  // Without keep_paths only nested subvolumes' nodes go here (files get none), then dropped.
  PathTable scratch_;
  PathTable& table_;
};

}  // namespace

btrfs::Result<void> scan_queue(btrfs::TreeSource& trees, std::deque<Work> queue,
                               const std::vector<btrfs::Subvolume>& all, uint64_t file_inode,
                               const ScanOptions& options, ScanResult& out) {
  QueueScan scan(trees, std::move(queue), all, file_inode, options, out);
  return scan.run();
}

}  // namespace btrdedupe
