// Scans built by hand over real files in a temporary directory: for the stages that open a
// scanned file by its path and read its bytes (open_scanned_file), which need no btrfs and
// no root when the scan's extents are given rather than read from a tree.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "btrfs/fd.h"
#include "src/read/tree_scan.h"

namespace btrdedupe::test {

class RealFiles {
 public:
  static constexpr uint32_t kSectorBytes = 4096;

  RealFiles() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/real-files-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp " + pattern);
    dir = std::filesystem::canonical(pattern).string();
    scan.roots.push_back({dir, false});
    scan.fs.sectorsize = kSectorBytes;
    scan.fs.csum_size = 4;
    scan.fs.csum_type = btrfs::CsumType::Crc32c;
  }
  ~RealFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  RealFiles(const RealFiles&) = delete;
  RealFiles& operator=(const RealFiles&) = delete;

  // A file `name` of the directory holding `bytes`, scanned as it is now; its index.
  uint32_t add_file(const std::string& name, const std::vector<uint8_t>& bytes) {
    write(name, bytes);
    struct stat st {};
    if (::stat(path(name).c_str(), &st) != 0) throw std::runtime_error("stat " + name);
    ScannedFile f;
    f.subvolume = 5;
    f.inode = st.st_ino;
    f.size = bytes.size();
    f.mtime_sec = st.st_mtim.tv_sec;
    f.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    f.path_node = scan.paths.add(PathTable::kRoot, name);
    scan.files.push_back(f);
    return static_cast<uint32_t>(scan.files.size() - 1);
  }

  // Writes `bytes` to `name` (created or replaced in place: same inode).
  void write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    auto fd = btrfs::Fd::open(path(name), O_WRONLY | O_CREAT | O_TRUNC);
    if (!fd) throw std::runtime_error(fd.error().message());
    if (::write(fd->get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("write " + name);
  }

  // One regular extent of file `f` at a fresh disk address.
  void add_extent(uint32_t f, uint64_t file_offset, uint64_t length) {
    FileExtent e;
    e.file = f;
    e.file_offset = file_offset;
    e.length = length;
    e.disk_bytenr = next_bytenr_;
    e.disk_num_bytes = length;
    next_bytenr_ += (length + kSectorBytes - 1) / kSectorBytes * kSectorBytes;
    scan.extents.push_back(e);
  }

  std::string path(const std::string& name) const { return dir + "/" + name; }

  std::string dir;
  ScanResult scan;

 private:
  uint64_t next_bytenr_ = 1ULL << 30;
};

// `sectors` sectors, sector i filled with byte (seed + i), then `tail` more bytes.
inline std::vector<uint8_t> sector_bytes(uint8_t seed, size_t sectors, size_t tail = 0) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < sectors; ++i)
    out.insert(out.end(), RealFiles::kSectorBytes, static_cast<uint8_t>(seed + i));
  out.insert(out.end(), tail, static_cast<uint8_t>(seed + sectors));
  return out;
}

}  // namespace btrdedupe::test
