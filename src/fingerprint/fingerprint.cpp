#include "src/fingerprint/fingerprint.h"

#include <fcntl.h>
#include <linux/btrfs_tree.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "btrfs/fd.h"
#include "btrfs/items.h"
#include "btrfs/tree_search.h"
#include "src/fingerprint/compressed_twins.h"
#include "src/fingerprint/csum_ranges.h"
#include "src/fingerprint/extent_reads.h"
#include "src/fingerprint/extent_sums.h"
#include "src/dedupe/io_threads.h"

namespace btrdedupe {
namespace {

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool is_wanted(const std::vector<bool>* wanted, uint32_t file) {
  return !wanted || (*wanted)[file];
}

// The physical extents referenced by wanted files (all files when wanted is null), and
// the buffers their sums point into.
struct PhysicalExtents {
  std::vector<ExtentSums> extents;
  std::vector<uint8_t> sums, known;
};

PhysicalExtents physical_extents(const ScanResult& scan, const std::vector<bool>* wanted) {
  const uint32_t ss = scan.fs.sectorsize;
  const uint16_t cs = scan.fs.csum_size;
  const auto& ex = scan.extents;
  // Two passes: the first sizes the vector exactly (growth by doubling left up to half of
  // it unused at the fingerprint phase's peak).
  auto each = [&](auto&& take) {
    for (size_t i = 0; i < ex.size();) {
      ExtentSums e;
      e.first_ref = i;
      e.disk_bytenr = ex[i].disk_bytenr;
      e.compressed = ex[i].compression != btrfs::Compression::None;
      for (; i < ex.size() && ex[i].disk_bytenr == e.disk_bytenr; ++i)
        e.sectors = std::max(e.sectors, div_up(ex[i].extent_offset + ex[i].length, ss));
      e.end_ref = i;
      bool any = false;
      for (size_t r = e.first_ref; r < e.end_ref && !any; ++r)
        any = is_wanted(wanted, ex[r].file);
      if (any) take(e);
    }
  };
  size_t count = 0;
  uint64_t sectors = 0;
  each([&](const ExtentSums& e) {
    ++count;
    sectors += e.sectors;
  });
  PhysicalExtents out;
  out.extents.reserve(count);
  out.sums.assign(sectors * cs, 0);
  out.known.assign(sectors, 0);
  uint64_t at = 0;
  each([&](ExtentSums& e) {
    e.sums = out.sums.data() + at * cs;
    e.known = out.known.data() + at;
    at += e.sectors;
    out.extents.push_back(e);
  });
  return out;
}

// One walk of the csum tree in disk order: the sums of the plain extents, and the sums of
// the compressed extents' on-disk bytes, which make their keys (compressed_twins.h).
btrfs::Result<std::vector<CompressedTwin>> sums_from_csum_tree(btrfs::TreeSource& csums,
                                                               const ScanResult& scan,
                                                               std::vector<ExtentSums>& extents,
                                                               FingerprintStats& st) {
  const uint32_t ss = scan.fs.sectorsize;
  const uint16_t cs = scan.fs.csum_size;
  CompressedKeys compressed(cs);
  std::vector<DiskRange> ranges;
  std::vector<size_t> key_of(extents.size(), 0);
  ranges.reserve(extents.size());
  for (size_t i = 0; i < extents.size(); ++i) {
    const ExtentSums& e = extents[i];
    uint64_t sectors = e.sectors;
    if (e.compressed) {
      const FileExtent& ref = scan.extents[e.first_ref];
      sectors = div_up(ref.disk_num_bytes, ss);
      key_of[i] = compressed.add(i, ref.compression, sectors);
    }
    ranges.push_back({e.disk_bytenr, sectors});
  }
  auto walked = for_each_csum(
      csums, scan.fs, ranges,
      [&](size_t r, uint64_t s, const uint8_t* sums, uint64_t n) {
        ExtentSums& e = extents[r];
        if (e.compressed) return compressed.take(key_of[r], s, sums, n);
        std::memcpy(&e.sums[s * cs], sums, n * cs);
        std::fill_n(&e.known[s], n, uint8_t{1});
      },
      &st.csum_searches);
  if (!walked) return walked.error();
  return compressed.twins(extents);
}

// Whether a sector some reference of e covers has no sum yet.
bool needs_read(const ScanResult& scan, const ExtentSums& e) {
  const uint32_t ss = scan.fs.sectorsize;
  for (size_t r = e.first_ref; r < e.end_ref; ++r) {
    const auto& ref = scan.extents[r];
    for (uint64_t s = ref.extent_offset / ss; s < div_up(ref.extent_offset + ref.length, ss); ++s)
      if (!e.known[s]) return true;
  }
  return false;
}

// A twin takes the sums its read extent has (the same decompressed data).
void take_sums(const CompressedTwin& t, std::vector<ExtentSums>& extents, uint16_t cs) {
  ExtentSums& to = extents[t.twin];
  const ExtentSums& from = extents[t.read];
  for (uint64_t s = 0; s < std::min(to.sectors, from.sectors); ++s)
    if (from.known[s] && !to.known[s]) {
      std::memcpy(&to.sums[s * cs], &from.sums[s * cs], cs);
      to.known[s] = true;
    }
}

// Extents whose every referenced sector came from the csum tree are done (counted into
// `done`); the others are returned, in disk order, to be read, but for the twins of
// compressed extents, which take the sums of the one read in their stead.
std::vector<size_t> extents_to_read(const ScanResult& scan, const std::vector<ExtentSums>& extents,
                                    const std::vector<CompressedTwin>& twins,
                                    FingerprintStats& st, uint64_t& done) {
  const uint32_t ss = scan.fs.sectorsize;
  std::vector<bool> is_twin(extents.size(), false), reads_for_twins(extents.size(), false);
  for (const auto& t : twins) {
    is_twin[t.twin] = true;
    reads_for_twins[t.read] = true;
  }
  std::vector<size_t> to_read;
  for (size_t i = 0; i < extents.size(); ++i) {
    const ExtentSums& e = extents[i];
    if (is_twin[i]) continue;
    if (needs_read(scan, e)) {
      to_read.push_back(i);
      (reads_for_twins[i] ? st.read_for.twin_groups
       : e.compressed     ? st.read_for.compressed_without_twin
                          : st.read_for.without_checksums) += e.sectors * ss;
    } else {
      ++st.extents_from_csums;
      st.bytes_from_csums += e.sectors * ss;
      done += e.sectors * ss;
    }
  }
  return to_read;
}

// Once their read extents are summed, the twins take their sums. A twin whose references
// reach sectors its read extent's did not is returned, in disk order, to be read for those;
// the others are counted into `done`.
std::vector<size_t> twin_remainders(const ScanResult& scan, std::vector<ExtentSums>& extents,
                                    const std::vector<CompressedTwin>& twins,
                                    FingerprintStats& st, uint64_t& done) {
  const uint32_t ss = scan.fs.sectorsize;
  std::vector<size_t> rest;
  for (const auto& t : twins) {
    take_sums(t, extents, scan.fs.csum_size);
    if (needs_read(scan, extents[t.twin])) {
      rest.push_back(t.twin);
      st.read_for.twin_remainders += extents[t.twin].sectors * ss;
    } else {
      ++st.extents_from_twins;
      st.bytes_from_twins += extents[t.twin].sectors * ss;
      done += extents[t.twin].sectors * ss;
    }
  }
  std::sort(rest.begin(), rest.end());
  return rest;
}

// Each wanted file's sums, laid out from the extents it references.
FileSumsTable file_sums_table(const ScanResult& scan, const std::vector<ExtentSums>& extents,
                              const std::vector<bool>* wanted) {
  const uint32_t ss = scan.fs.sectorsize;
  const uint16_t cs = scan.fs.csum_size;
  // Files without a regular extent (inline, holes only; a third of a source tree) and
  // unwanted files get no sectors: unknown, never matched. The others are sized first, so
  // the table is allocated once.
  std::vector<bool> has_sums(scan.files.size(), false);
  for (const FileExtent& ref : scan.extents)
    if (is_wanted(wanted, ref.file)) has_sums[ref.file] = true;
  auto file_sectors = [&](size_t f) { return has_sums[f] ? div_up(scan.files[f].size, ss) : 0; };
  uint64_t total = 0;
  for (size_t f = 0; f < scan.files.size(); ++f) total += file_sectors(f);
  FileSumsTable table(cs);
  table.reserve(scan.files.size(), total);
  for (size_t f = 0; f < scan.files.size(); ++f) table.add(file_sectors(f));
  for (const auto& e : extents) {
    for (size_t r = e.first_ref; r < e.end_ref; ++r) {
      const FileExtent& ref = scan.extents[r];
      if (!is_wanted(wanted, ref.file)) continue;
      const std::span<uint8_t> file_sums = table.sums(ref.file);
      const std::span<uint8_t> file_known = table.known(ref.file);
      const uint64_t first_file_sector = ref.file_offset / ss;
      const uint64_t n = div_up(ref.length, ss);
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t fs_sector = first_file_sector + k, ex_sector = ref.extent_offset / ss + k;
        if (fs_sector >= file_known.size() || !e.known[ex_sector]) continue;
        std::memcpy(&file_sums[fs_sector * cs], &e.sums[ex_sector * cs], cs);
        file_known[fs_sector] = 1;
      }
    }
  }
  return table;
}

}  // namespace

bool FileSumsView::complete() const {
  return std::all_of(known.begin(), known.end(), [](uint8_t k) { return k != 0; });
}

FileSumsView FileSumsTable::operator[](size_t file) const {
  const uint64_t first = begin(file), end = ends_[file];
  return {{sums_.data() + first * csum_size_, (end - first) * csum_size_},
          {known_.data() + first, end - first}};
}

void FileSumsTable::add(uint64_t sectors) {
  const uint64_t end = total_sectors() + sectors;
  ends_.push_back(end);
  sums_.resize(end * csum_size_, 0);
  known_.resize(end, 0);
}

void FileSumsTable::add(FileSumsView file) {
  ends_.push_back(total_sectors() + file.sectors());
  sums_.insert(sums_.end(), file.sums.begin(), file.sums.end());
  known_.insert(known_.end(), file.known.begin(), file.known.end());
}

void FileSumsTable::reserve(size_t files, uint64_t sectors) {
  ends_.reserve(files);
  sums_.reserve(sectors * csum_size_);
  known_.reserve(sectors);
}

FileSumsTable FileSumsTable::gather(size_t files, uint16_t csum_size,
                                    const std::function<FileSumsView(size_t)>& pick) {
  uint64_t sectors = 0;
  for (size_t i = 0; i < files; ++i) sectors += pick(i).sectors();
  FileSumsTable out(csum_size);
  out.reserve(files, sectors);
  for (size_t i = 0; i < files; ++i) out.add(pick(i));
  return out;
}

std::span<uint8_t> FileSumsTable::sums(size_t file) {
  const uint64_t first = begin(file);
  return {sums_.data() + first * csum_size_, (ends_[file] - first) * csum_size_};
}

std::span<uint8_t> FileSumsTable::known(size_t file) {
  const uint64_t first = begin(file);
  return {known_.data() + first, ends_[file] - first};
}

btrfs::Result<FingerprintResult> fingerprint(
    const ScanResult& scan, const std::function<void(uint64_t bytes_done)>& on_progress,
    const std::vector<bool>* wanted, unsigned threads, btrfs::TreeSource* csums) {
  FingerprintResult out;
  auto& st = out.stats;
  const uint32_t ss = scan.fs.sectorsize;
  const uint16_t cs = scan.fs.csum_size;
  if (ss == 0 || cs == 0) return btrfs::Error{EINVAL, "fingerprint: scan has no filesystem info"};

  if (scan.roots.empty()) return out;
  std::optional<btrfs::Fd> dir;
  std::optional<btrfs::KernelTreeSource> kernel;
  if (!csums) {
    auto opened = btrfs::Fd::open(scan.roots[0].path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (!opened) return opened.error();
    dir.emplace(std::move(*opened));
    csums = &kernel.emplace(dir->get());
  }
  auto physical = physical_extents(scan, wanted);
  auto& extents = physical.extents;
  auto twins = sums_from_csum_tree(*csums, scan, extents, st);
  if (!twins) return twins.error();

  uint64_t done = 0;
  const std::vector<size_t> to_read = extents_to_read(scan, extents, *twins, st, done);
  if (on_progress) on_progress(done);
  if (threads == 0) threads = default_io_threads(scan.roots[0].path);
  std::function<void(uint64_t)> read_progress;
  if (on_progress) read_progress = [&](uint64_t bytes) { on_progress(done + bytes); };
  read_extent_sums(scan, extents, to_read, threads, read_progress, st);
  for (size_t i : to_read) done += extents[i].sectors * ss;

  const std::vector<size_t> rest = twin_remainders(scan, extents, *twins, st, done);
  if (on_progress) on_progress(done);
  read_extent_sums(scan, extents, rest, threads, read_progress, st);

  out.files = file_sums_table(scan, extents, wanted);
  return out;
}

void FingerprintStats::add(const FingerprintStats& more) {
  extents_from_csums += more.extents_from_csums;
  bytes_from_csums += more.bytes_from_csums;
  extents_read += more.extents_read;
  bytes_read += more.bytes_read;
  extents_from_twins += more.extents_from_twins;
  bytes_from_twins += more.bytes_from_twins;
  read_for.twin_groups += more.read_for.twin_groups;
  read_for.compressed_without_twin += more.read_for.compressed_without_twin;
  read_for.twin_remainders += more.read_for.twin_remainders;
  read_for.without_checksums += more.read_for.without_checksums;
  csum_searches += more.csum_searches;
  read_errors += more.read_errors;
  errors.insert(errors.end(), more.errors.begin(), more.errors.end());
}

}  // namespace btrdedupe
