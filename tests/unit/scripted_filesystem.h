// A scripted filesystem for unit tests of whole runs (tests/unit/batch_loop_test.cpp): the
// dedupe calls answered by a script, the ranges answered Same applied to the scans as the
// kernel would (extents split, the destination pointing at the source's extent), and real
// files in a temporary directory for the dedupe engine to open.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/run/run_kernel.h"
#include "tests/unit/synthetic_fs.h"

namespace btrdedupe::test {

inline constexpr uint64_t kSubvolume = 5;

inline btrfs::DedupeOutcome same(uint64_t bytes) { return {btrfs::DedupeStatus::Same, 0, bytes}; }
inline btrfs::DedupeOutcome differs() { return {btrfs::DedupeStatus::Differs, 0, 0}; }
inline btrfs::DedupeOutcome failed(int code) { return {btrfs::DedupeStatus::Error, code, 0}; }

inline uint64_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// One destination range the kernel said it shared with (source inode, offset).
struct Shared {
  uint64_t src_inode, src_offset, dst_inode, dst_offset, bytes;
};

// The filesystem as the run reaches it: dedupe calls answered by `script` (call index, the
// call's destinations), the ranges answered Same kept for the trees, and the extents the
// trees reference after the confirmation.
class ScriptedFilesystem final : public RunKernel, public DedupeKernel {
 public:
  using Script = std::function<std::vector<btrfs::DedupeOutcome>(
      size_t call, uint64_t length, size_t destinations)>;
  Script script = [](size_t, uint64_t length, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(n, same(length));
  };
  std::function<void(size_t call)> on_call;  // e.g. a stop that comes mid-round
  std::set<uint64_t> referenced;             // disk addresses the trees hold now

  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int src_fd, uint64_t src_offset, uint64_t length,
      std::span<const btrfs::DedupeDestination> destinations) override {
    std::lock_guard lock(mu_);
    const size_t n = calls_++;
    if (on_call) on_call(n);
    auto outcomes = script(n, length, destinations.size());
    for (size_t i = 0; i < destinations.size(); ++i)
      if (outcomes[i].status == btrfs::DedupeStatus::Same && outcomes[i].bytes_deduped)
        shared_.push_back({inode_of(src_fd), src_offset, inode_of(destinations[i].fd),
                           destinations[i].offset, outcomes[i].bytes_deduped});
    return btrfs::DedupeCall{length, length, std::move(outcomes)};
  }
  DedupeKernel& dedupe() override { return *this; }
  RewriteKernel& rewrite() override { return kernel_rewrite(); }  // no remainder is planned
  btrfs::Result<std::vector<bool>> still_allocated(const ScanResult&,
                                                   const std::vector<PhysicalExtent>& extents,
                                                   uint64_t) override {
    std::vector<bool> out;
    for (const auto& e : extents) out.push_back(referenced.count(e.bytenr) != 0);
    return out;
  }
  std::vector<btrfs::Subvolume> subvolumes(const std::string&) override { return {}; }
  unsigned io_threads(const std::string&) override { return 1; }

  size_t calls() const { return calls_; }
  std::vector<Shared> shared() {
    std::lock_guard lock(mu_);
    return shared_;
  }

 private:
  std::mutex mu_;
  size_t calls_ = 0;
  std::vector<Shared> shared_;
};

// The destination's range now references the source's extent: its extents are split at
// the range's ends, as the kernel splits them, and the part inside points at the source.
inline void share(ScanResult& scan, const Shared& s) {
  const FileExtent* from = nullptr;
  for (const auto& e : scan.extents)
    if (scan.files[e.file].inode == s.src_inode && e.file_offset <= s.src_offset &&
        s.src_offset < e.file_offset + e.length)
      from = &e;
  if (!from) return;
  const FileExtent source = *from;
  const uint64_t begin = s.dst_offset, end = s.dst_offset + s.bytes;
  std::vector<FileExtent> out;
  for (const auto& e : scan.extents) {
    const uint64_t e_end = e.file_offset + e.length;
    if (scan.files[e.file].inode != s.dst_inode || e_end <= begin || e.file_offset >= end) {
      out.push_back(e);
      continue;
    }
    const auto piece = [&](uint64_t from_offset, uint64_t to_offset) {
      FileExtent p = e;
      p.file_offset = from_offset;
      p.length = to_offset - from_offset;
      p.extent_offset = e.extent_offset + (from_offset - e.file_offset);
      return p;
    };
    if (e.file_offset < begin) out.push_back(piece(e.file_offset, begin));
    FileExtent mid = piece(std::max(e.file_offset, begin), std::min(e_end, end));
    mid.disk_bytenr = source.disk_bytenr;
    mid.disk_num_bytes = source.disk_num_bytes;
    mid.extent_offset = source.extent_offset + (s.src_offset - source.file_offset) +
                        (mid.file_offset - begin);
    out.push_back(mid);
    if (e_end > end) out.push_back(piece(end, e_end));
  }
  scan.extents = std::move(out);
}

// Real files in `dir` for the files of `batch` (each sector filled from its content id), their
// inodes and mtimes as the scan would show them.
inline void write_files(const std::string& dir, const std::string& prefix,
                 const std::vector<std::vector<uint32_t>>& contents, SyntheticFs& batch) {
  for (uint32_t f = 0; f < contents.size(); ++f) {
    const std::string name = prefix + "f" + std::to_string(f);
    const std::string path = dir + "/" + name;
    std::vector<char> bytes;
    for (const uint32_t id : contents[f])
      bytes.insert(bytes.end(), kSector, static_cast<char>('a' + id % 26));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    struct stat st {};
    ASSERT_EQ(::fstat(fd, &st), 0);
    ::close(fd);
    auto& file = batch.scan.files[f];
    file.subvolume = kSubvolume;
    file.inode = st.st_ino;
    file.mtime_sec = st.st_mtim.tv_sec;
    file.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    file.path_node = batch.scan.paths.add(PathTable::kRoot, name);
  }
}

// A batch of files given by their sectors' content ids (equal ids: equal bytes), each file
// one extent at disk addresses from `disk`, written as real files in `dir`.
inline SyntheticFs make_batch(const std::string& dir, const std::string& prefix,
                       const std::vector<std::vector<uint32_t>>& contents, uint64_t disk) {
  SyntheticFs batch;
  batch.scan.roots = {{dir, false}};
  for (const auto& content : contents) batch.add_file(content.size() * kSector, content);
  for (auto& e : batch.scan.extents) e.disk_bytenr += disk;
  for (auto& f : batch.scan.files) f.path_node = 0;
  batch.scan.paths = PathTable();
  write_files(dir, prefix, contents, batch);
  return batch;
}

}  // namespace btrdedupe::test
