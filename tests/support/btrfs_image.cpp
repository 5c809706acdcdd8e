#include "support/btrfs_image.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/shell.h"

namespace fs = std::filesystem;

namespace btrdedupe::test {
namespace {

std::string base_dir() {
  const char* env = std::getenv("BTRDEDUPE_TEST_DIR");
  return env && *env ? env : "/var/tmp/btrdedupe-tests";
}

// Field 22 of /proc/PID/stat: the start time, which tells a reused pid from the original.
std::string process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return "";
  const auto close = line.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && (rest >> field); ++i) {
  }
  return field;
}

bool allow_skip() {
  const char* env = std::getenv("BTRDEDUPE_ALLOW_SKIP");
  return env && std::string(env) == "1";
}

bool is_mounted(const std::string& mount_point) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, mp, rest;
  while (in >> dev >> mp && std::getline(in, rest))
    if (mp == mount_point) return true;
  return false;
}

bool unmount(const std::string& mount_point) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::umount2(mount_point.c_str(), 0) == 0 || errno == EINVAL || errno == ENOENT) return true;
    if (errno != EBUSY) break;
    ::usleep(100 * 1000);
  }
  return ::umount2(mount_point.c_str(), MNT_DETACH) == 0;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool attach_and_mount(const std::string& image, const std::string& mount_point,
                      const std::string& options, const std::string& fs_type,
                      std::string* device, std::string* why) {
  const auto loop = run_command("losetup -f --show " + shell_quote(image));
  if (loop.exit_code != 0) {
    *why = "losetup -f --show " + image + " failed: " + loop.output;
    return false;
  }
  *device = trim(loop.output);
  std::string cmd = "mount -t " + fs_type + " ";
  if (!options.empty()) cmd += "-o " + shell_quote(options) + " ";
  cmd += shell_quote(*device) + " " + shell_quote(mount_point);
  const auto mounted = run_command(cmd);
  // Detaching a mounted loop device only marks it autoclear: it goes away with the mount.
  const auto detached = run_command("losetup -d " + shell_quote(*device));
  if (mounted.exit_code != 0) {
    *why = cmd + " failed: " + mounted.output;
    return false;
  }
  if (detached.exit_code != 0) {
    *why = "losetup -d " + *device + " failed: " + detached.output;
    unmount(mount_point);
    return false;
  }
  return true;
}

}  // namespace

bool enter_private_mount_namespace(std::string* why) {
  if (::unshare(CLONE_NEWNS) != 0) {
    *why = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno) +
           " (integration tests need root to mount btrfs images)";
    return false;
  }
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *why = std::string("making / private in the new mount namespace: ") + std::strerror(errno);
    return false;
  }
  return true;
}

void remove_stale_work_dirs() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base_dir(), ec)) {
    const std::string name = entry.path().filename();
    // <pid>-<starttime>-<random>
    const auto dash1 = name.find('-');
    const auto dash2 = name.find('-', dash1 + 1);
    if (dash1 == std::string::npos || dash2 == std::string::npos) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name.substr(0, dash1)));
    } catch (...) {
      continue;
    }
    const std::string start = name.substr(dash1 + 1, dash2 - dash1 - 1);
    const bool alive = ::kill(pid, 0) == 0 || errno == EPERM;
    if (alive && process_start_time(pid) == start) continue;
    const std::string mp = entry.path() / "mnt";
    if (is_mounted(mp) && !unmount(mp)) continue;  // never delete through a live mount
    fs::remove_all(entry.path(), ec);
  }
}

std::unique_ptr<BtrfsImage> BtrfsImage::create(const ImageOptions& options, std::string* why) {
  std::error_code ec;
  fs::create_directories(base_dir(), ec);
  const pid_t pid = ::getpid();
  std::string templ = base_dir() + "/" + std::to_string(pid) + "-" + process_start_time(pid) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    *why = "mkdtemp " + templ + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<BtrfsImage> img(new BtrfsImage());  // private constructor
  img->work_dir_ = templ;
  img->image_ = templ + "/image";
  img->mount_point_ = templ + "/mnt";
  img->mount_options_ = options.mount_options;
  fs::create_directory(img->mount_point_, ec);

  const auto truncated =
      run_command("truncate -s " + std::to_string(options.size_bytes) + " " + shell_quote(img->image_));
  if (truncated.exit_code != 0) {
    *why = "truncate failed: " + truncated.output;
    return nullptr;
  }
  img->fs_type_ = options.fs_type;
  std::string mkfs = "mkfs." + options.fs_type + " -q -f";
  for (const auto& arg : options.mkfs_args) mkfs += " " + shell_quote(arg);
  const auto made = run_command(mkfs + " " + shell_quote(img->image_));
  if (made.exit_code != 0) {
    *why = mkfs + " failed (are btrfs-progs and xfsprogs installed?): " + made.output;
    return nullptr;
  }
  if (!attach_and_mount(img->image_, img->mount_point_, img->mount_options_, img->fs_type_,
                        &img->device_, why))
    return nullptr;
  img->mounted_ = true;
  return img;
}

BtrfsImage::~BtrfsImage() {
  if (mounted_) unmount(mount_point_);
  std::error_code ec;
  if (!is_mounted(mount_point_)) fs::remove_all(work_dir_, ec);
}

std::string BtrfsImage::path(const std::string& relative) const {
  return relative.empty() ? mount_point_ : mount_point_ + "/" + relative;
}

bool BtrfsImage::remount(std::string* why) {
  ::sync();
  if (!unmount(mount_point_)) {
    *why = "umount " + mount_point_ + ": " + std::strerror(errno);
    return false;
  }
  mounted_ = false;
  if (!attach_and_mount(image_, mount_point_, mount_options_, fs_type_, &device_, why)) return false;
  mounted_ = true;
  return true;
}

bool BtrfsImage::check_unmounted(std::string* report) {
  ::sync();
  if (!unmount(mount_point_)) {
    *report = "umount " + mount_point_ + ": " + std::strerror(errno);
    return false;
  }
  mounted_ = false;
  const auto check = run_command("btrfs check --readonly " + shell_quote(image_) + " 2>&1");
  *report = check.output;
  std::string why;
  if (!attach_and_mount(image_, mount_point_, mount_options_, fs_type_, &device_, &why)) {
    *report += "\nmount again: " + why;
    return false;
  }
  mounted_ = true;
  return check.exit_code == 0;
}

void BtrfsTest::SetUp() {
  std::string why;
  fs_ = BtrfsImage::create(image_options(), &why);
  if (!fs_) {
    if (allow_skip()) GTEST_SKIP() << "btrfs unavailable (BTRDEDUPE_ALLOW_SKIP=1): " << why;
    FAIL() << "cannot create a btrfs test filesystem: " << why
           << "\n(set BTRDEDUPE_ALLOW_SKIP=1 to skip btrfs tests on an unprivileged machine)";
  }
}

void BtrfsTest::TearDown() { fs_.reset(); }

std::string BtrfsTest::sh(const std::string& command) {
  const auto result = run_command(command);
  EXPECT_EQ(result.exit_code, 0) << "command failed: " << command << "\n" << result.output;
  return result.output;
}

void BtrfsTest::build_layout(const std::string& name, const std::string& relative_dir) {
  const auto result = run_command(std::string("bash ") + BTRDEDUPE_FIXTURES_DIR + "/build-layout " +
                                  shell_quote(name) + " " + shell_quote(path(relative_dir)));
  ASSERT_EQ(result.exit_code, 0) << "fixture " << name << " failed:\n" << result.output;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace btrdedupe::test
