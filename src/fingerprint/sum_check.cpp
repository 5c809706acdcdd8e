#include "src/fingerprint/sum_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/read/file_extent_index.h"
#include "src/read/scanned_file.h"
#include "src/fingerprint/sector_checksum.h"

namespace btrdedupe {
namespace {

constexpr uint64_t kChunkBytes = 1 << 20;

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::string hex(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

// Per sector of one file: does a regular extent hold it (so the filesystem summed it)?
std::vector<bool> data_sectors(const ScanResult& scan, const FileExtentIndex& index,
                               uint32_t file, uint64_t sectors) {
  const uint32_t ss = scan.fs.sectorsize;
  std::vector<bool> out(sectors, false);
  for (uint32_t idx : index.of(file)) {
    const FileExtent& e = scan.extents[idx];
    const uint64_t end = std::min(sectors, div_up(e.file_offset + e.length, ss));
    for (uint64_t s = e.file_offset / ss; s < end; ++s) out[s] = true;
  }
  return out;
}

// Reads `want` bytes at `offset` (fewer at EOF); -1 with errno on error.
ssize_t read_fully(int fd, uint8_t* buf, size_t want, uint64_t offset) {
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd, buf + got, want - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

class Checker {
 public:
  Checker(const ScanResult& scan, const FingerprintResult& fp, size_t keep)
      : scan_(scan), fp_(fp), keep_(keep), index_(scan), algo_(scan.fs.csum_type),
        buf_(kChunkBytes) {}

  void check_file(uint32_t f);
  SumCheck result;

 private:
  void check_sector(uint32_t f, uint64_t s, const uint8_t* data, bool has_data);
  void mismatch(uint32_t f, uint64_t s, std::string fingerprint, std::string data);

  const ScanResult& scan_;
  const FingerprintResult& fp_;
  size_t keep_;
  FileExtentIndex index_;
  SectorChecksum algo_;
  std::vector<uint8_t> buf_;
};

void Checker::mismatch(uint32_t f, uint64_t s, std::string fingerprint, std::string data) {
  ++result.mismatches;
  if (result.first.size() < keep_)
    result.first.push_back({f, s * scan_.fs.sectorsize, std::move(fingerprint), std::move(data)});
}

void Checker::check_sector(uint32_t f, uint64_t s, const uint8_t* data, bool has_data) {
  const uint16_t cs = scan_.fs.csum_size;
  const FileSumsView view = fp_.files[f];
  const bool known = s < view.sectors() && view.known[s];
  const uint8_t* fp_sum = known ? view.sums.data() + s * cs : nullptr;
  if (!has_data) {
    ++result.sectors_without_data;
    // The matcher compares any known sum: one where no data is would be taken as content.
    if (known) mismatch(f, s, hex(fp_sum, cs), "none");
    return;
  }
  if (!known) {
    ++result.sectors_unknown;
    return;
  }
  ++result.sectors_checked;
  uint8_t sum[64];
  algo_.compute({data, scan_.fs.sectorsize}, sum);
  if (std::memcmp(sum, fp_sum, cs) != 0) mismatch(f, s, hex(fp_sum, cs), hex(sum, cs));
}

void Checker::check_file(uint32_t f) {
  const ScannedFile& file = scan_.files[f];
  const uint32_t ss = scan_.fs.sectorsize;
  const uint64_t sectors = div_up(file.size, ss);
  ++result.files;
  if (file.nodatasum()) {
    result.sectors_nodatasum += sectors;
    return;
  }
  const std::vector<bool> has_data = data_sectors(scan_, index_, f, sectors);
  auto fd = open_scanned_file(scan_, file, false);
  if (!fd) {
    ++result.read_errors;
    if (result.errors.size() < keep_) result.errors.push_back(fd.error().message());
    return;
  }
  for (uint64_t at = 0; at < sectors * ss; at += kChunkBytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, sectors * ss - at));
    const ssize_t got = read_fully(fd->get(), buf_.data(), want, at);
    if (got < 0 || static_cast<uint64_t>(got) < std::min<uint64_t>(want, file.size - at)) {
      ++result.read_errors;
      const std::string why = got < 0 ? std::strerror(errno) : "shorter than scanned";
      if (result.errors.size() < keep_) result.errors.push_back(file_path(scan_, file) + ": " + why);
      return;
    }
    // The kernel sums a final partial sector as the page holds it: zeros past EOF.
    std::memset(buf_.data() + got, 0, want - static_cast<size_t>(got));
    for (uint64_t k = 0; k < want / ss; ++k)
      check_sector(f, at / ss + k, buf_.data() + k * ss, has_data[at / ss + k]);
  }
}

}  // namespace

SumCheck check_sums(const ScanResult& scan, const FingerprintResult& fp, size_t keep) {
  Checker checker(scan, fp, keep);
  for (uint32_t f = 0; f < scan.files.size(); ++f) checker.check_file(f);
  return std::move(checker.result);
}

std::string summary_line(const SumCheck& c) {
  return "files " + std::to_string(c.files) + ", sectors checked " +
         std::to_string(c.sectors_checked) + ", mismatches " + std::to_string(c.mismatches) +
         " (skipped: " + std::to_string(c.sectors_without_data) +
         " sectors without data (holes, prealloc, inline), " +
         std::to_string(c.sectors_nodatasum) + " nodatasum, " +
         std::to_string(c.sectors_unknown) + " unknown to the fingerprint; " +
         std::to_string(c.read_errors) + " read errors)";
}

}  // namespace btrdedupe
