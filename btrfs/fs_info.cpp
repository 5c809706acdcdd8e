#include "btrfs/fs_info.h"

#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

#include <cstdio>
#include <cstring>

namespace btrfs {
namespace {

// FS_IOC_GETFSUUID (Linux 6.5), which Debian 12's headers do not have yet.
struct FsUuid {
  uint8_t len;
  uint8_t uuid[16];
};
constexpr unsigned long kGetFsUuid = _IOR(0x15, 0, FsUuid);

// Names for the filesystems people most often point a tool at by mistake.
const char* filesystem_name(long magic) {
  switch (static_cast<unsigned long>(magic)) {
    case EXT4_SUPER_MAGIC: return "ext2/ext3/ext4";
    case TMPFS_MAGIC: return "tmpfs";
    case XFS_SUPER_MAGIC: return "xfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
    case NFS_SUPER_MAGIC: return "nfs";
    case PROC_SUPER_MAGIC: return "proc";
    case SYSFS_MAGIC: return "sysfs";
    case 0x01021997: return "9p";
    case 0x65735546: return "fuse";
    case 0x2fc12fc1: return "zfs";
    case 0x4d44: return "vfat";
    case 0x5346544e: return "ntfs";
    case 0xf2f52010: return "f2fs";
    case 0x858458f6: return "ramfs";
    case 0x1373: return "devtmpfs";
    default: return nullptr;
  }
}

}  // namespace

std::string FsInfo::fsid_string() const {
  char buf[37];
  std::snprintf(buf, sizeof buf,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                fsid[0], fsid[1], fsid[2], fsid[3], fsid[4], fsid[5], fsid[6], fsid[7], fsid[8],
                fsid[9], fsid[10], fsid[11], fsid[12], fsid[13], fsid[14], fsid[15]);
  return buf;
}

const char* csum_type_name(CsumType type) {
  switch (type) {
    case CsumType::Crc32c: return "crc32c";
    case CsumType::Xxhash64: return "xxhash";
    case CsumType::Sha256: return "sha256";
    case CsumType::Blake2b: return "blake2";
  }
  return "unknown";
}

Result<FsKind> filesystem_kind(int fd, std::string* name) {
  struct statfs st {};
  if (::fstatfs(fd, &st) != 0) return errno_error("statfs");
  const auto magic = static_cast<unsigned long>(st.f_type);
  if (magic == BTRFS_SUPER_MAGIC) return FsKind::Btrfs;
  if (magic == XFS_SUPER_MAGIC) return FsKind::Xfs;
  if (name) {
    const char* known = filesystem_name(st.f_type);
    char hex[32];
    std::snprintf(hex, sizeof hex, "type 0x%lx", magic);
    *name = known ? known : hex;
  }
  return FsKind::Other;
}

Result<void> check_is_btrfs(int fd, const std::string& path) {
  std::string name = "xfs";
  auto kind = filesystem_kind(fd, &name);
  if (!kind) return errno_error("statfs " + path);
  if (*kind == FsKind::Btrfs) return {};
  // No errno: the sentence says it all, "Inappropriate ioctl" would only confuse.
  return Error{0, path + " is on " + name + ", not btrfs"};
}

Result<FsInfo> read_walked_fs_info(int fd, FsKind kind) {
  if (kind == FsKind::Btrfs) {
    auto info = read_fs_info(fd);
    if (info) info->generation = 0;  // a walk tells no change by generation
    return info;
  }
  struct statfs st {};
  if (::fstatfs(fd, &st) != 0) return errno_error("statfs");
  FsInfo info;
  FsUuid uuid{};
  if (::ioctl(fd, kGetFsUuid, &uuid) == 0 && uuid.len == info.fsid.size()) {
    std::memcpy(info.fsid.data(), uuid.uuid, info.fsid.size());
  } else {  // an older kernel: the statfs id, stable while the device is
    std::memcpy(info.fsid.data(), &st.f_fsid, sizeof st.f_fsid);
  }
  info.num_devices = 1;
  info.sectorsize = static_cast<uint32_t>(st.f_bsize);
  info.csum_type = CsumType::Xxhash64;
  info.csum_size = 8;
  return info;
}

Result<FsInfo> read_fs_info(int fd) {
  btrfs_ioctl_fs_info_args args{};
  args.flags = BTRFS_FS_INFO_FLAG_CSUM_INFO | BTRFS_FS_INFO_FLAG_GENERATION;
  if (::ioctl(fd, BTRFS_IOC_FS_INFO, &args) != 0) return errno_error("BTRFS_IOC_FS_INFO");
  FsInfo info;
  std::memcpy(info.fsid.data(), args.fsid, info.fsid.size());
  info.num_devices = args.num_devices;
  info.nodesize = args.nodesize;
  info.sectorsize = args.sectorsize;
  if (args.flags & BTRFS_FS_INFO_FLAG_CSUM_INFO) {
    info.csum_type = static_cast<CsumType>(args.csum_type);
    info.csum_size = args.csum_size;
  } else {
    // Kernels before 5.5 do not report it; they only know crc32c.
    info.csum_type = CsumType::Crc32c;
    info.csum_size = 4;
  }
  if (args.flags & BTRFS_FS_INFO_FLAG_GENERATION) info.generation = args.generation;
  return info;
}

}  // namespace btrfs
