// A real btrfs filesystem for one test: sparse image file, mkfs.btrfs, loop device, mount.
//
// Leak-proofing: the test process runs in its own private mount namespace (see
// enter_private_mount_namespace), and the loop device is detached right after the
// mount, which only sets its autoclear flag. So when the process exits -- normally,
// on a failed assertion or on a crash -- the kernel drops the namespace's mounts
// and the loop device goes with the last mount. The image file lives in a work
// directory named after the owning pid; later runs delete those whose pid is dead.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace btrdedupe::test {

struct ImageOptions {
  uint64_t size_bytes = 1ULL << 30;     // sparse: costs only what is written
  std::vector<std::string> mkfs_args;   // e.g. {"--csum", "xxhash"}
  std::string mount_options;            // e.g. "compress=zstd"
  std::string fs_type = "btrfs";        // "xfs": the path reader's other filesystem
};

class BtrfsImage {
 public:
  // Creates, formats and mounts an image. On failure returns nullptr and sets *why.
  static std::unique_ptr<BtrfsImage> create(const ImageOptions& options, std::string* why);
  ~BtrfsImage();
  BtrfsImage(const BtrfsImage&) = delete;
  BtrfsImage& operator=(const BtrfsImage&) = delete;

  const std::string& mount_point() const { return mount_point_; }
  const std::string& device() const { return device_; }   // loop device, e.g. /dev/loop3
  const std::string& image_file() const { return image_; }
  // mount_point() + "/" + relative
  std::string path(const std::string& relative) const;

  // Unmounts and mounts again: drops every cached page and extent map of this filesystem.
  bool remount(std::string* why);
  // Unmounts, runs `btrfs check --readonly` on the image (its output in *report), and
  // mounts again. False when the check found errors or a step failed (*report says).
  bool check_unmounted(std::string* report);

 private:
  BtrfsImage() = default;
  std::string work_dir_, image_, mount_point_, device_, mount_options_, fs_type_;
  bool mounted_ = false;
};

// Makes this process's mounts private to it. Call once, before any thread starts.
// Returns false (and says why) when the process may not do so.
bool enter_private_mount_namespace(std::string* why);

// Removes work directories left by test processes that no longer exist.
void remove_stale_work_dirs();

// Base for tests that need btrfs. SetUp creates the image; when btrfs cannot be had the
// test FAILS with the reason, unless BTRDEDUPE_ALLOW_SKIP=1 is set, where it is skipped.
class BtrfsTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  virtual ImageOptions image_options() const { return {}; }

  const BtrfsImage& fs() const { return *fs_; }
  BtrfsImage& fs() { return *fs_; }
  std::string path(const std::string& relative) const { return fs_->path(relative); }

  // Runs a shell command; the test fails (non-fatally) with its output when it exits non-zero.
  std::string sh(const std::string& command);
  // Builds a fixture layout (fixtures/build-layout NAME DIR) under the mount point.
  void build_layout(const std::string& name, const std::string& relative_dir);

  std::unique_ptr<BtrfsImage> fs_;
};

// Reads a whole file (test convenience; fails the test on error).
std::string read_file(const std::string& path);

}  // namespace btrdedupe::test
