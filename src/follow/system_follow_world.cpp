#include "src/follow/system_follow_world.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "btrfs/fd.h"
#include "src/read/root_reader.h"
#include "btrfs/fs_info.h"
#include "btrfs/space_reservations.h"
#include "src/run/heap_release.h"
#include "src/run/job.h"

namespace btrdedupe {
namespace {

// linux/ioprio.h is not in every libc's headers: the two values it defines that we need.
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassIdle = 3;
constexpr int kIoprioClassShift = 13;

class SystemFollowWorld final : public FollowWorld {
 public:
  SystemFollowWorld(std::string path, std::string fsid, std::string status_path,
                    std::FILE* json_events, ProgressSink* progress)
      : path_(std::move(path)), fsid_(std::move(fsid)), status_path_(std::move(status_path)),
        json_events_(json_events), progress_(progress) {}

  // Opened afresh each time: an fd held open would keep a lazily unmounted filesystem
  // alive and hide that it is gone.
  btrfs::Result<ChangeMarks> look() override {
    auto fd = btrfs::Fd::open(path_, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (!fd) return btrfs::Error{fd.error().code, path_ + " is gone: " + fd.error().message()};
    auto info = btrfs::read_fs_info(fd->get());
    if (!info || info->fsid_string() != fsid_)
      return btrfs::Error{ENODEV, "the filesystem followed at " + path_ + " was unmounted"};
    struct statvfs st {};
    if (::fstatvfs(fd->get(), &st) == 0 && (st.f_flag & ST_RDONLY))
      return btrfs::Error{EROFS, "the filesystem at " + path_ + " is read-only now"};
    auto reserved = btrfs::reserved_for_writes(fsid_);
    return ChangeMarks{info->generation, reserved ? *reserved : 0};
  }

  void commit() override {
    auto fd = btrfs::Fd::open(path_, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (fd) ::syncfs(fd->get());
  }

  // A follower waits far longer than it runs: what a cycle freed goes back to the system
  // rather than staying resident until the next one.
  JobReport run(const JobOptions& options) override {
    JobReport report = run_job(options, progress_);
    release_free_heap();
    return report;
  }

  void publish(const FollowStatus& status) override {
    if (auto ok = write_follow_status(status_path_, status); !ok && !warned_) {
      std::fprintf(stderr, "btrdedupe: cannot write the follower's status: %s\n",
                   ok.error().message().c_str());
      warned_ = true;
    }
    if (json_events_) {
      std::fprintf(json_events_, "{\"event\":\"follow\",\"status\":%s}\n", to_json(status).c_str());
      std::fflush(json_events_);
    }
  }

  int64_t unix_now() override { return ::time(nullptr); }

 private:
  std::string path_, fsid_, status_path_;
  std::FILE* json_events_;
  ProgressSink* progress_;
  bool warned_ = false;
};

}  // namespace

btrfs::Result<std::unique_ptr<FollowWorld>> system_follow_world(const std::string& path,
                                                                const std::string& hashfile,
                                                                std::FILE* json_events,
                                                                ProgressSink* progress) {
  auto fd = btrfs::Fd::open(path, O_RDONLY | O_NONBLOCK);
  if (!fd) return fd.error();
  if (auto ok = btrfs::check_is_btrfs(fd->get(), path); !ok) return ok.error();
  // A cycle reads what changed since the last by generation: the tree reader's way.
  if (!reader_ground(fd->get()).may_search_trees)
    return btrfs::Error{EPERM, "--follow reads the trees of btrfs, which needs root "
                               "(CAP_SYS_ADMIN)"};
  auto info = btrfs::read_fs_info(fd->get());
  if (!info) return info.error();
  if (info->generation == 0)
    return btrfs::Error{ENOTSUP, "--follow needs a kernel that reports the filesystem's "
                                 "generation (FS_INFO, Linux 5.15 or later)"};
  return std::unique_ptr<FollowWorld>(std::make_unique<SystemFollowWorld>(
      path, info->fsid_string(), follow_status_path(hashfile), json_events, progress));
}

std::unique_ptr<FollowWorld> follow_world_at(const std::string& path, const std::string& fsid,
                                             const std::string& status_path,
                                             std::FILE* json_events, ProgressSink* progress) {
  return std::make_unique<SystemFollowWorld>(path, fsid, status_path, json_events, progress);
}

std::string take_idle_priority() {
  std::string missed;
  if (::setpriority(PRIO_PROCESS, 0, 19) != 0) missed += std::string("nice 19: ") + std::strerror(errno);
  const int idle = kIoprioClassIdle << kIoprioClassShift;
  if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, idle) != 0)
    missed += std::string(missed.empty() ? "" : "; ") + "idle I/O class: " + std::strerror(errno);
  struct sched_param none {};
  if (::sched_setscheduler(0, SCHED_IDLE, &none) != 0)
    missed += std::string(missed.empty() ? "" : "; ") + "SCHED_IDLE: " + std::strerror(errno);
  return missed;
}

}  // namespace btrdedupe
