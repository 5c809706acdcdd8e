#include "src/dedupe/remainder_rewrite.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <vector>

#include "src/dedupe/dedupe_engine.h"
#include "src/read/scanned_file.h"

namespace btrdedupe {
namespace {

// Failures every later copy would meet too: the phase ends there.
bool ends_the_phase(int code) {
  return code == ENOSPC || code == EDQUOT || code == EROFS || code == EOPNOTSUPP;
}

class RemainderRewrite {
 public:
  RemainderRewrite(const ScanResult& scan, const RemainderPlan& plan, const RewriteOptions& o)
      : scan_(scan), plan_(plan), options_(o), kernel_(o.kernel ? *o.kernel : kernel_rewrite()) {}

  RewriteStats run() {
    // Nothing of this phase: no commit either (a syncfs costs a run its wait).
    if (std::none_of(plan_.extents.begin(), plan_.extents.end(), [&](const RemainderExtent& e) {
          return e.before_rounds == options_.before_rounds;
        }))
      return stats_;
    auto fs = btrfs::Fd::open(scan_.roots.front().path, O_RDONLY | O_NONBLOCK);
    if (!fs) {
      for (const auto& e : plan_.extents) fall_back(e.ranges.size(), fs.error().message());
      return stats_;
    }
    kernel_.commit(fs->get());
    for (size_t i = 0; i < plan_.extents.size(); ++i) {
      if (plan_.extents[i].before_rounds != options_.before_rounds) continue;
      if (options_.stop && options_.stop->load()) break;
      if (ended_) {
        fall_back(plan_.extents[i].ranges.size(), "");
        continue;
      }
      rewrite_extent(fs->get(), plan_.extents[i]);
    }
    measure_new_extents(fs->get());
    return stats_;
  }

 private:
  void rewrite_extent(int fs_fd, const RemainderExtent& extent) {
    auto refs = kernel_.extent_references(fs_fd, extent.bytenr);
    if (!refs && refs.error().code == ENOENT) return;  // already freed: nothing to write
    if (!refs) {
      fall_back(extent.ranges.size(), refs.error().message());
      return;
    }
    if (!held_only_by_remainder(extent, *refs)) {
      ++stats_.extents_still_referenced;
      return;
    }
    size_t done = 0;
    for (const auto& range : extent.ranges) {
      if (ended_) {
        fall_back(1, "");
        continue;
      }
      done += rewrite_range(range) ? 1 : 0;
    }
    if (done == extent.ranges.size()) ++stats_.extents_rewritten;
  }

  // The extent's references are exactly its remainder ranges (one extent item each), or
  // before the rounds, exactly those the scan saw.
  bool held_only_by_remainder(const RemainderExtent& extent,
                              std::vector<btrfs::ExtentRef> refs) const {
    using Key = std::tuple<uint64_t, uint64_t, uint64_t>;  // subvolume, inode, offset
    std::vector<Key> want, have;
    for (const auto& r : extent.before_rounds ? extent.references : extent.ranges) {
      const ScannedFile& f = scan_.files[r.file];
      want.emplace_back(f.subvolume, f.inode, r.offset);
    }
    for (const auto& r : refs) have.emplace_back(r.root, r.inode, r.offset);
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    return want == have;
  }

  bool rewrite_range(const RemainderRange& range) {
    const ScannedFile& f = scan_.files[range.file];
    const auto path = file_path(scan_, f);
    auto file = open_scanned_file(scan_, f, true);
    if (!file) {
      fall_back(1, file.error().message());
      return false;
    }
    auto dir = open_directory(path, f);
    if (!dir) {
      fall_back(1, path + ": " + dir.error().message());
      return false;
    }
    auto copy = kernel_.unnamed_copy(dir->get(), file->get(), range.offset, range.length);
    if (!copy) {
      ended_ = ends_the_phase(copy.error().code);
      fall_back(1, path + ": temporary copy: " + copy.error().message());
      return false;
    }
    stats_.bytes_written += range.length;
    if (options_.on_progress) options_.on_progress(stats_.bytes_written);
    const btrfs::DedupeDestination to{file->get(), range.offset};
    auto call = kernel_.dedupe_range(copy->get(), 0, range.length, {&to, 1});
    if (!call) {
      ended_ = ends_the_phase(call.error().code);
      fall_back(1, path + ": " + call.error().message());
      return false;
    }
    const auto& o = call->outcomes.front();
    if (o.status == btrfs::DedupeStatus::Same && o.bytes_deduped == range.length) {
      ++stats_.ranges_rewritten;
      rewritten_.push_back(range);
      return true;
    }
    if (o.status == btrfs::DedupeStatus::Error) {
      ended_ = ends_the_phase(o.error);
      fall_back(1, path + ": " + dedupe_error_reason(o.error) + " (" + std::strerror(o.error) + ")");
    } else if (o.status == btrfs::DedupeStatus::Differs) {
      fall_back(1, path + ": content changed while it was copied: left as it was");
    } else {
      fall_back(1, path + ": the kernel shared " + std::to_string(o.bytes_deduped) + " of " +
                       std::to_string(range.length) + " bytes");
    }
    return false;
  }

  // What the new extents take, once their transaction committed (a compressed extent's
  // size is in the extent tree only then). Not known (an error): the copy's own size,
  // sector-rounded; a compressed one takes less.
  void measure_new_extents(int fs_fd) {
    if (rewritten_.empty()) return;
    kernel_.commit(fs_fd);
    const uint32_t sector = std::max<uint32_t>(scan_.fs.sectorsize, 1);
    for (const auto& range : rewritten_) {
      const ScannedFile& f = scan_.files[range.file];
      uint64_t bytes = (range.length + sector - 1) / sector * sector;
      if (auto file = open_scanned_file(scan_, f, false))
        if (auto disk = kernel_.disk_bytes(file->get(), range.offset, range.length, sector))
          bytes = *disk;
      stats_.disk_bytes_allocated += bytes;
      stats_.allocated_by_subvolume[f.subvolume] += bytes;
    }
  }

  // The copy goes into the file's own directory (its subvolume, its inherited settings);
  // failing that, the scan root's: the same filesystem either way.
  btrfs::Result<btrfs::Fd> open_directory(const std::string& path, const ScannedFile& f) const {
    auto dir = btrfs::Fd::open(std::filesystem::path(path).parent_path().string(),
                               O_RDONLY | O_DIRECTORY);
    if (dir) return dir;
    const ScanRoot& root = scan_.roots[f.root];
    const auto root_dir = root.is_file ? std::filesystem::path(root.path).parent_path().string()
                                       : root.path;
    return btrfs::Fd::open(root_dir, O_RDONLY | O_DIRECTORY);
  }

  void fall_back(uint64_t ranges, const std::string& why) {
    stats_.ranges_fell_back += ranges;
    if (stats_.fallback_reason.empty() && !why.empty()) stats_.fallback_reason = why;
  }

  const ScanResult& scan_;
  const RemainderPlan& plan_;
  const RewriteOptions& options_;
  RewriteKernel& kernel_;
  RewriteStats stats_;
  std::vector<RemainderRange> rewritten_;  // shared from a copy: their new extents to measure
  bool ended_ = false;  // a failure every later copy would meet: try nothing more
};

}  // namespace

void RewriteStats::add(const RewriteStats& more) {
  planned_extents += more.planned_extents;
  planned_bytes += more.planned_bytes;
  skipped_for_budget += more.skipped_for_budget;
  bytes_skipped_for_budget += more.bytes_skipped_for_budget;
  extents_rewritten += more.extents_rewritten;
  ranges_rewritten += more.ranges_rewritten;
  bytes_written += more.bytes_written;
  disk_bytes_allocated += more.disk_bytes_allocated;
  for (const auto& [id, b] : more.allocated_by_subvolume) allocated_by_subvolume[id] += b;
  extents_still_referenced += more.extents_still_referenced;
  ranges_fell_back += more.ranges_fell_back;
  if (fallback_reason.empty()) fallback_reason = more.fallback_reason;
}

RewriteStats rewrite_remainders(const ScanResult& scan, const RemainderPlan& plan,
                                const RewriteOptions& options) {
  return RemainderRewrite(scan, plan, options).run();
}

}  // namespace btrdedupe
