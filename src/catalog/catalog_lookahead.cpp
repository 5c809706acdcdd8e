// A windowed dedupe run's first pass (the rule is in catalog_session.h): every window's rows
// are written before any dedupe, so that each window can take its files' twins from the
// windows still to come too (src/run/window_twins.h), and a source is read once for all its
// copies. Also the row and anchors a file's sums give (fingerprinted), which every run writes.
#include "src/catalog/catalog_session.h"
#include "src/fingerprint/content_hash.h"
#include "src/read/file_extent_index.h"

namespace btrdedupe {

CatalogSession::Fingerprinted CatalogSession::fingerprinted(const ScanResult& scan,
                                                            const FileExtentIndex& index,
                                                            const FileSumsView& sums,
                                                            uint32_t i) const {
  const ScannedFile& f = scan.files[i];
  Fingerprinted entry;
  entry.row = {f.size, f.mtime_sec * 1000000000LL + f.mtime_nsec, f.inode_flags,
               whole_file_hash(scan, index, sums, i), f.parent, std::nullopt};
  entry.anchors = catalog_anchors(sums, f.size, scan.fs.sectorsize, scan.fs.csum_size,
                                  block_size_, f.nodatasum(),
                                  scan.fs.csum_type == btrfs::CsumType::Crc32c);
  return entry;
}

// Sums from the csum tree only: a compressed extent or a nodatasum file is read for its
// sums, and that read is left to the file's own window.
std::vector<bool> CatalogSession::summed_from_csums(const ScanResult& scan) {
  std::vector<bool> out(scan.files.size(), true);
  for (uint32_t i = 0; i < scan.files.size(); ++i) out[i] = !scan.files[i].nodatasum();
  for (const auto& e : scan.extents)
    if (e.compression != btrfs::Compression::None) out[e.file] = false;
  return out;
}

btrfs::Result<void> CatalogSession::index_window(ScanResult& window) {
  // The whole run's rows in one transaction, as a full run's.
  if (auto ok = catalog_->begin_unless_writing(); !ok) return ok.error();
  const std::vector<bool> wanted = summed_from_csums(window);
  auto fp = btrdedupe::fingerprint(window, {}, &wanted, read_threads_, csums_);
  if (!fp) return fp.error();
  const FileExtentIndex index(window);
  for (uint32_t i = 0; i < window.files.size(); ++i) {
    if (!wanted[i]) continue;
    const auto& f = window.files[i];
    const Fingerprinted entry = fingerprinted(window, index, fp->files[i], i);
    if (!entry.row.whole_hash && entry.anchors.empty()) continue;
    if (auto ok = catalog_->add_file({f.subvolume, f.inode}, entry.row, entry.anchors); !ok)
      return ok.error();
  }
  return {};
}

}  // namespace btrdedupe
