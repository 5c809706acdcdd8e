#include "src/scanned_file.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace btrdedupe {

std::string file_path(const ScanResult& scan, const ScannedFile& file) {
  const ScanRoot& root = scan.roots.at(file.root);
  if (root.is_file || file.path.empty()) return root.path;
  return root.path + "/" + file.path;
}

btrfs::Result<btrfs::Fd> open_scanned_file(const ScanResult& scan, const ScannedFile& file,
                                           bool unchanged) {
  const std::string p = file_path(scan, file);
  auto fd = btrfs::Fd::open(p, O_RDONLY | O_NOFOLLOW | O_NOATIME);
  if (!fd && fd.error().code == EPERM) fd = btrfs::Fd::open(p, O_RDONLY | O_NOFOLLOW);
  if (!fd) return fd.error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return btrfs::errno_error("stat " + p);
  if (st.st_ino != file.inode || !S_ISREG(st.st_mode))
    return btrfs::Error{ESTALE, p + ": replaced by another file since the scan"};
  if (unchanged && (static_cast<uint64_t>(st.st_size) != file.size ||
                    st.st_mtim.tv_sec != file.mtime.sec ||
                    static_cast<uint32_t>(st.st_mtim.tv_nsec) != file.mtime.nsec))
    return btrfs::Error{ESTALE, p + ": changed since the scan"};
  return fd;
}

}  // namespace btrdedupe
