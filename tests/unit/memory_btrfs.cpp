#include "tests/unit/memory_btrfs.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <stdexcept>

#include "btrfs/items.h"
#include "src/fingerprint/sector_checksum.h"
#include "src/read/incremental_scan.h"
#include "src/read/scan_scope.h"
#include "src/read/subvolume_queue_scan.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kSectorBytes = 4096;
constexpr uint64_t kTopDir = BTRFS_FIRST_FREE_OBJECTID;

uint64_t inode_of_fd(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

std::vector<uint8_t> item_of(const btrfs::InodeItem& it) { return btrfs::encode_inode_item(it); }

}  // namespace

MemoryBtrfs::MemoryBtrfs() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/memory-btrfs-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern);
  root_ = std::filesystem::canonical(pattern).string();
  touch_top_directory();
  const btrfs::InodeName self{kTopDir, 0, ".."};
  tree_.add(kTop, {kTopDir, BTRFS_INODE_REF_KEY, kTopDir}, btrfs::encode_inode_refs({&self, 1}),
            generation_);
  walked_ = std::make_unique<Walked>(*this);
  walk_reader_ = path_reader(*walked_);
}

MemoryBtrfs::~MemoryBtrfs() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

btrfs::FsInfo MemoryBtrfs::fs_info() const {
  btrfs::FsInfo fs;
  fs.fsid = {0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79};  // "memory"
  fs.num_devices = 1;
  fs.nodesize = 16384;
  fs.sectorsize = kSectorBytes;
  fs.csum_size = 4;
  fs.generation = generation_;
  return fs;
}

btrfs::Subvolume MemoryBtrfs::top() const {
  btrfs::Subvolume s;
  s.id = kTop;
  s.generation = generation_;
  return s;
}

uint64_t MemoryBtrfs::write_file(const std::string& name, const std::vector<uint32_t>& content,
                                 Stored stored) {
  File f;
  f.name = name;
  f.stored = stored;
  const std::string path = root_ + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path);
  const uint64_t ino = inode_of_fd(fd);
  ::close(fd);
  File& kept = files_[ino] = f;
  put_file(ino, kept, content);
  name_file(ino, kept);
  return ino;
}

uint64_t MemoryBtrfs::inode_named(const std::string& name) const {
  for (const auto& [ino, f] : files_)
    if (f.name == name) return ino;
  throw std::runtime_error("no file " + name);
}

void MemoryBtrfs::rewrite_file(const std::string& name, const std::vector<uint32_t>& content) {
  const uint64_t ino = inode_named(name);
  put_file(ino, files_.at(ino), content);
}

void MemoryBtrfs::remove_file(const std::string& name) {
  const uint64_t ino = inode_named(name);
  ++generation_;
  remove_items(ino);
  unname_file(ino, files_.at(ino));
  files_.erase(ino);
  std::filesystem::remove(root_ + "/" + name);
  touch_top_directory();
}

void MemoryBtrfs::rename_file(const std::string& from, const std::string& to) {
  const uint64_t ino = inode_named(from);
  File& f = files_.at(ino);
  std::filesystem::rename(root_ + "/" + from, root_ + "/" + to);
  ++generation_;
  unname_file(ino, f);
  f.name = to;
  name_file(ino, f);
  put_items(ino, f);  // a rename sets the inode's ctime: its item is written again
}

void MemoryBtrfs::name_file(uint64_t ino, File& f) {
  f.index = ++dir_index_;
  const btrfs::InodeName n{kTopDir, f.index, f.name};
  tree_.add(kTop, {ino, BTRFS_INODE_REF_KEY, kTopDir}, btrfs::encode_inode_refs({&n, 1}),
            generation_);
  tree_.add(kTop, {kTopDir, BTRFS_DIR_INDEX_KEY, f.index},
            btrfs::encode_dir_index({ino, BTRFS_INODE_ITEM_KEY}, f.name, BTRFS_FT_REG_FILE),
            generation_);
  touch_top_directory();
}

void MemoryBtrfs::unname_file(uint64_t ino, const File& f) {
  tree_.remove(kTop, {ino, BTRFS_INODE_REF_KEY, kTopDir});
  tree_.remove(kTop, {kTopDir, BTRFS_DIR_INDEX_KEY, f.index});
}

void MemoryBtrfs::touch_top_directory() {
  btrfs::InodeItem dir;
  dir.generation = 10;
  dir.transid = generation_;
  dir.mode = 040755;
  dir.nlink = 1;
  dir.ctime = dir.mtime = {static_cast<int64_t>(std::time(nullptr)), 0};
  tree_.add(kTop, {kTopDir, BTRFS_INODE_ITEM_KEY, 0}, item_of(dir), generation_);
}

void MemoryBtrfs::put_file(uint64_t ino, File& f, const std::vector<uint32_t>& content) {
  const std::string path = root_ + "/" + f.name;
  std::vector<uint8_t> bytes;  // each sector its id's four bytes over and over
  for (const uint32_t id : content)
    for (uint64_t i = 0; i < kSectorBytes; ++i) bytes.push_back(static_cast<uint8_t>(id >> (8 * (i % 4))));
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::fstat(fd, &st) != 0)
    throw std::runtime_error("write " + path);
  ::close(fd);
  ++generation_;
  remove_items(ino);
  f.size = bytes.size();
  // The real file's: the dedupe engine checks a file against its scan before a call.
  f.mtime = {st.st_mtim.tv_sec, static_cast<uint32_t>(st.st_mtim.tv_nsec)};
  const uint64_t extent = content.size() * kSectorBytes, bytenr = next_bytenr_;
  next_bytenr_ += std::max<uint64_t>(extent, kSectorBytes) + (1 << 20);
  const uint64_t on_disk = f.stored == Stored::Compressed
                               ? std::max<uint64_t>(extent / 2 / kSectorBytes, 1) * kSectorBytes
                               : extent;
  f.pieces = {{0, extent, bytenr, extent, 0, on_disk}};
  if (f.stored == Stored::Summed) {
    const SectorChecksum crc(btrfs::CsumType::Crc32c);
    std::vector<uint8_t> sums(content.size() * crc.size());
    for (size_t i = 0; i < content.size(); ++i)
      crc.compute({bytes.data() + i * kSectorBytes, kSectorBytes}, &sums[i * crc.size()]);
    tree_.add(BTRFS_CSUM_TREE_OBJECTID,
              {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, bytenr}, std::move(sums),
              generation_);
  }
  put_items(ino, f);
}

// The inode item and extent items of `f` as they are now, in the current generation.
void MemoryBtrfs::put_items(uint64_t ino, const File& f) {
  btrfs::InodeItem it;
  it.generation = 10;
  it.transid = generation_;
  it.mode = 0100644;
  it.nlink = 1;
  it.size = f.size;
  it.nbytes = f.size;
  it.flags = f.stored == Stored::NoDataSum ? btrfs::kInodeNoDataSum : 0;
  it.mtime = it.ctime = f.mtime;
  tree_.add(kTop, {ino, BTRFS_INODE_ITEM_KEY, 0}, item_of(it), generation_);
  for (const Piece& p : f.pieces) {
    btrfs::FileExtentItem fe;
    fe.generation = generation_;
    fe.type = btrfs::FileExtentType::Regular;
    fe.ram_bytes = p.extent_bytes;
    fe.disk_num_bytes = p.disk_bytes;
    if (p.disk_bytes < p.extent_bytes) fe.compression = btrfs::Compression::Zstd;
    fe.disk_bytenr = p.bytenr;
    fe.offset = p.extent_offset;
    fe.num_bytes = p.length;
    tree_.add(kTop, {ino, BTRFS_EXTENT_DATA_KEY, p.file_offset},
              btrfs::encode_file_extent_item(fe), generation_);
  }
}

void MemoryBtrfs::remove_items(uint64_t ino) {
  tree_.remove(kTop, {ino, BTRFS_INODE_ITEM_KEY, 0});
  const auto it = files_.find(ino);
  if (it == files_.end()) return;
  for (const Piece& p : it->second.pieces)
    tree_.remove(kTop, {ino, BTRFS_EXTENT_DATA_KEY, p.file_offset});
}

std::set<uint64_t> MemoryBtrfs::extents_of(const std::string& name) const {
  std::set<uint64_t> out;
  for (const auto& [ino, f] : files_)
    if (f.name == name)
      for (const Piece& p : f.pieces) out.insert(p.bytenr);
  return out;
}

uint64_t MemoryBtrfs::referenced_bytes() const {
  std::map<uint64_t, uint64_t> extents;
  for (const auto& [ino, f] : files_)
    for (const Piece& p : f.pieces) extents[p.bytenr] = p.disk_bytes;
  uint64_t bytes = 0;
  for (const auto& [bytenr, size] : extents) bytes += size;
  return bytes;
}

size_t MemoryBtrfs::dedupe_calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

btrfs::Result<ScanResult> MemoryBtrfs::scan(const std::string& root, const ScanOptions& o) const {
  ScanResult out;
  out.fs = fs_info();
  uint64_t top_inode = kTopDir;
  bool is_file = false;
  for (const auto& [ino, f] : files_)
    if (root == root_ + "/" + f.name) top_inode = ino, is_file = true;
  if (!is_file && root != root_) return btrfs::Error{ENOENT, root + " is not in " + root_};
  out.roots.push_back({root, is_file});
  std::deque<Work> queue{{kTop, top_inode, "", PathTable::kRoot, 0}};
  if (auto ok = scan_queue(tree_, std::move(queue), {top()}, top_inode, o, out); !ok)
    return ok.error();
  return out;
}

btrfs::Result<std::string> MemoryBtrfs::fsid(const std::string&) const {
  return fs_info().fsid_string();
}

btrfs::Result<std::unordered_map<uint64_t, uint64_t>> MemoryBtrfs::generations(
    const std::string&) const {
  return std::unordered_map<uint64_t, uint64_t>{{kTop, generation_}};
}

btrfs::Result<std::unique_ptr<IncrementalScan>> MemoryBtrfs::targeted(const ScanScope& scope,
                                                                      const ScanOptions& options,
                                                                      ScanResult& out) const {
  if (scope.paths != std::vector<std::string>{root_}) return std::unique_ptr<IncrementalScan>{};
  auto scan = IncrementalScan::of_tree_source(tree_, {{kTop, root_}}, {top()}, options, out);
  out.fs = fs_info();
  return scan;
}

RewriteKernel& MemoryBtrfs::rewrite() { return kernel_rewrite(); }  // tests plan no remainder

btrfs::Result<std::vector<bool>> MemoryBtrfs::still_allocated(
    const ScanResult&, const std::vector<PhysicalExtent>& extents, uint64_t) {
  std::set<uint64_t> referenced;
  for (const auto& [ino, f] : files_)
    for (const Piece& p : f.pieces) referenced.insert(p.bytenr);
  std::vector<bool> out;
  for (const auto& e : extents) out.push_back(referenced.count(e.bytenr) != 0);
  return out;
}

btrfs::Result<btrfs::DedupeCall> MemoryBtrfs::dedupe_range(
    int src_fd, uint64_t src_offset, uint64_t length,
    std::span<const btrfs::DedupeDestination> destinations) {
  std::lock_guard lock(mu_);
  const size_t n = calls_++;
  if (on_call) on_call(n);
  auto outcomes = script ? script(n, length, destinations.size())
                         : std::vector<btrfs::DedupeOutcome>(
                               destinations.size(), {btrfs::DedupeStatus::Same, 0, length});
  for (size_t i = 0; i < destinations.size(); ++i)
    if (outcomes[i].status == btrfs::DedupeStatus::Same && outcomes[i].bytes_deduped)
      share(inode_of_fd(src_fd), src_offset, inode_of_fd(destinations[i].fd),
            destinations[i].offset, outcomes[i].bytes_deduped);
  return btrfs::DedupeCall{length, length, std::move(outcomes)};
}

void MemoryBtrfs::share(uint64_t src, uint64_t src_offset, uint64_t dst, uint64_t dst_offset,
                        uint64_t bytes) {
  const auto& from = files_.at(src).pieces;
  const auto source = std::find_if(from.begin(), from.end(), [&](const Piece& p) {
    return p.file_offset <= src_offset && src_offset < p.file_offset + p.length;
  });
  if (source == from.end()) return;
  File& f = files_.at(dst);
  const uint64_t begin = dst_offset, end = dst_offset + bytes;
  std::vector<Piece> out;
  for (const Piece& p : f.pieces) {
    const uint64_t p_end = p.file_offset + p.length;
    if (p_end <= begin || p.file_offset >= end) {
      out.push_back(p);
      continue;
    }
    const auto part = [&](uint64_t a, uint64_t b) {
      return Piece{a, b - a, p.bytenr, p.extent_bytes, p.extent_offset + (a - p.file_offset),
                   p.disk_bytes};
    };
    if (p.file_offset < begin) out.push_back(part(p.file_offset, begin));
    const uint64_t a = std::max(p.file_offset, begin), b = std::min(p_end, end);
    out.push_back({a, b - a, source->bytenr, source->extent_bytes,
                   source->extent_offset + (src_offset - source->file_offset) + (a - begin),
                   source->disk_bytes});
    if (p_end > end) out.push_back(part(end, p_end));
  }
  remove_items(dst);
  f.pieces = std::move(out);
  ++generation_;
  put_items(dst, f);
}

}  // namespace btrdedupe::test
