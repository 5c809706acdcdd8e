#include "src/run/run_kernel.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "btrfs/fd.h"
#include "src/dedupe/io_threads.h"

namespace btrdedupe {
namespace {

class Kernel final : public RunKernel {
 public:
  DedupeKernel& dedupe() override { return fideduperange(); }
  RewriteKernel& rewrite() override { return kernel_rewrite(); }
  btrfs::Result<std::vector<bool>> still_allocated(const ScanResult& now,
                                                   const std::vector<PhysicalExtent>& extents,
                                                   uint64_t scanned_at) override {
    auto fd = btrfs::Fd::open(now.roots.front().path, O_RDONLY | O_NONBLOCK);
    if (!fd) return fd.error();
    ::syncfs(fd->get());  // freed extents leave the tree when the transaction commits
    return btrdedupe::still_allocated(fd->get(), extents, scanned_at);
  }
  std::vector<btrfs::Subvolume> subvolumes(const std::string& root) override {
    auto all = btrfs::list_subvolumes(root);
    return all ? std::move(*all) : std::vector<btrfs::Subvolume>{};
  }
  unsigned io_threads(const std::string& root) override { return default_io_threads(root); }
};

// The physical ranges a walk's extents map, merged, in address order.
std::vector<std::pair<uint64_t, uint64_t>> mapped_ranges(const ScanResult& now) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& e : now.extents) ranges.emplace_back(e.disk_bytenr, e.disk_bytenr + e.length);
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

class WalkedKernel final : public RunKernel {
 public:
  DedupeKernel& dedupe() override { return fideduperange(); }
  RewriteKernel& rewrite() override { return kernel_rewrite(); }  // never asked: none planned
  btrfs::Result<std::vector<bool>> still_allocated(const ScanResult& now,
                                                   const std::vector<PhysicalExtent>& extents,
                                                   uint64_t) override {
    const auto mapped = mapped_ranges(now);
    std::vector<bool> out;
    out.reserve(extents.size());
    for (const auto& x : extents) {
      const uint64_t end = x.bytenr + std::max<uint64_t>(x.disk_bytes, 1);
      auto it = std::lower_bound(mapped.begin(), mapped.end(), std::make_pair(end, uint64_t{0}));
      const bool overlaps = it != mapped.begin() && std::prev(it)->second > x.bytenr;
      out.push_back(x.refs_unknown || overlaps);
    }
    return out;
  }
  std::vector<btrfs::Subvolume> subvolumes(const std::string&) override { return {}; }
  unsigned io_threads(const std::string& root) override { return default_io_threads(root); }
};

}  // namespace

RunKernel::~RunKernel() = default;

RunKernel& kernel_run() {
  static Kernel kernel;
  return kernel;
}

RunKernel& kernel_walked() {
  static WalkedKernel kernel;
  return kernel;
}

}  // namespace btrdedupe
