// FsInfo and subvolume listing against real filesystems.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "btrfs/fd.h"
#include "btrfs/fs_info.h"
#include "btrfs/subvolume.h"
#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

btrfs::Fd open_dir(const std::string& p) {
  auto fd = btrfs::Fd::open(p, O_RDONLY | O_DIRECTORY);
  EXPECT_TRUE(fd.ok()) << fd.error().message();
  return fd.ok() ? std::move(*fd) : btrfs::Fd();
}

std::string field(const std::string& text, const std::string& name) {
  const auto at = text.find(name);
  if (at == std::string::npos) return "";
  auto start = text.find_first_not_of(" \t", at + name.size());
  return text.substr(start, text.find('\n', start) - start);
}

class FsInfoTest : public BtrfsTest {};

TEST_F(FsInfoTest, ReportsWhatTheSuperblockSays) {
  auto fd = open_dir(fs().mount_point());
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  const auto dump = sh("btrfs inspect-internal dump-super " + shell_quote(fs().device()));
  EXPECT_EQ(info->fsid_string(), field(dump, "fsid"));
  EXPECT_EQ(std::to_string(info->sectorsize), field(dump, "sectorsize"));
  EXPECT_EQ(std::to_string(info->nodesize), field(dump, "nodesize"));
  EXPECT_EQ(info->csum_type, btrfs::CsumType::Crc32c);
  EXPECT_EQ(info->csum_size, 4);
  EXPECT_EQ(info->num_devices, 1u);
  EXPECT_GT(info->generation, 0u);
}

class FsInfoXxhashTest : public BtrfsTest {
  ImageOptions image_options() const override { return {1ULL << 30, {"--csum", "xxhash"}, ""}; }
};

TEST_F(FsInfoXxhashTest, ReportsTheChecksumAlgorithm) {
  auto fd = open_dir(fs().mount_point());
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->csum_type, btrfs::CsumType::Xxhash64);
  EXPECT_EQ(info->csum_size, 8);
  EXPECT_STREQ(btrfs::csum_type_name(info->csum_type), "xxhash");
}

class FsInfoSha256Test : public BtrfsTest {
  ImageOptions image_options() const override { return {1ULL << 30, {"--csum", "sha256"}, ""}; }
};

TEST_F(FsInfoSha256Test, ReportsTheChecksumAlgorithm) {
  auto fd = open_dir(fs().mount_point());
  auto info = btrfs::read_fs_info(fd.get());
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->csum_type, btrfs::CsumType::Sha256);
  EXPECT_EQ(info->csum_size, 32);
}

TEST(FsInfoOtherFilesystem, NamesTheFilesystemType) {
  auto fd = btrfs::Fd::open("/dev/shm", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(fd.ok());
  auto checked = btrfs::check_is_btrfs(fd->get(), "/dev/shm");
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().message().find("/dev/shm is on tmpfs, not btrfs"), 0u)
      << checked.error().message();
  auto info = btrfs::read_fs_info(fd->get());
  EXPECT_FALSE(info.ok());
}

class SubvolumeTest : public BtrfsTest {};

TEST_F(SubvolumeTest, ListsSubvolumesAndSnapshotsFromAnyPath) {
  sh("btrfs subvolume create " + shell_quote(path("vol")));
  sh("mkdir -p " + shell_quote(path("vol/dir")) + " && head -c 100000 /dev/urandom > " +
     shell_quote(path("vol/dir/f")));
  sh("btrfs subvolume snapshot -r " + shell_quote(path("vol")) + " " + shell_quote(path("snap")));
  sh("btrfs subvolume create " + shell_quote(path("vol/nested")));

  // From a path deep inside a subvolume, not its root.
  auto list = btrfs::list_subvolumes(path("vol/dir"));
  ASSERT_TRUE(list.ok()) << list.error().message();
  ASSERT_EQ(list->size(), 4u);
  EXPECT_EQ((*list)[0].id, btrfs::kTopLevelSubvolume);
  auto find = [&](const std::string& p) {
    auto it = std::find_if(list->begin(), list->end(), [&](auto& s) { return s.path == p; });
    EXPECT_NE(it, list->end()) << "no subvolume " << p;
    return it == list->end() ? btrfs::Subvolume{} : *it;
  };
  const auto vol = find("vol"), snap = find("snap"), nested = find("vol/nested");
  EXPECT_FALSE(vol.readonly);
  EXPECT_FALSE(vol.is_snapshot());
  EXPECT_TRUE(snap.readonly);
  EXPECT_TRUE(snap.is_snapshot());
  EXPECT_EQ(snap.parent_uuid, vol.uuid);
  EXPECT_EQ(nested.parent_id, vol.id);
  EXPECT_EQ(vol.parent_id, btrfs::kTopLevelSubvolume);
  EXPECT_GE(snap.otransid, vol.otransid);
  EXPECT_EQ(btrfs::uuid_string(snap.parent_uuid),
            field(sh("btrfs subvolume show " + shell_quote(path("snap"))), "Parent UUID:"));

  auto fd = open_dir(path("vol/dir"));
  auto id = btrfs::subvolume_id(fd.get());
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(*id, vol.id);

  auto info = btrfs::subvolume_info(fs().mount_point(), snap.id);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_TRUE(info->readonly);
  EXPECT_EQ(info->uuid, snap.uuid);
}

}  // namespace
}  // namespace btrdedupe::test
