#include "src/follow/follow_status.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "btrfs/fd.h"
#include "src/report/byte_size.h"

namespace btrdedupe {
namespace {

using Json = nlohmann::ordered_json;

#define FOLLOW_STATUS_FIELDS(X)                                                               \
  X(pid) X(started) X(state) X(waiting_for) X(stop_reason) X(cycles) X(cycles_with_changes)   \
  X(bytes_deduped) X(bytes_freed) X(files_read) X(last_change_seen) X(last_cycle_started)      \
  X(last_cycle_ended) X(last_cycle_seconds) X(files_settling) X(pauses) X(paused_seconds)     \
  X(last_error)

bool running(int64_t pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

std::string when(int64_t t) {
  if (t == 0) return "never";
  char buf[64];
  struct tm tm {};
  const time_t tt = t;
  ::localtime_r(&tt, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  const int64_t ago = ::time(nullptr) - t;
  return std::string(buf) + " (" + std::to_string(ago) + " s ago)";
}

std::string size(uint64_t bytes, bool human) {
  return human ? human_bytes(bytes) : std::to_string(bytes) + " bytes";
}

}  // namespace

std::string follow_status_path(const std::string& hashfile) { return hashfile + ".follow"; }

std::string to_json(const FollowStatus& s) {
  Json j;
#define PUT(f) j[#f] = s.f;
  FOLLOW_STATUS_FIELDS(PUT)
#undef PUT
  return j.dump();
}

std::optional<FollowStatus> follow_status_from_json(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  FollowStatus s;
  try {
#define GET(f) if (j.contains(#f)) j.at(#f).get_to(s.f);
    FOLLOW_STATUS_FIELDS(GET)
#undef GET
  } catch (const Json::exception&) {
    return std::nullopt;
  }
  return s;
}

btrfs::Result<void> write_follow_status(const std::string& path, const FollowStatus& s) {
  const std::string temporary = path + ".new";
  auto fd = btrfs::Fd::open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!fd) return fd.error();
  const std::string text = to_json(s) + "\n";
  if (::write(fd->get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return btrfs::errno_error("writing " + temporary);
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    return btrfs::errno_error("renaming " + temporary + " to " + path);
  return {};
}

btrfs::Result<FollowStatus> read_follow_status(const std::string& path) {
  std::ifstream in(path);
  if (!in) return btrfs::errno_error(path);
  std::stringstream text;
  text << in.rdbuf();
  auto s = follow_status_from_json(text.str());
  if (!s) return btrfs::Error{EINVAL, path + ": not a follower's status"};
  return *s;
}

int print_follow_status(const std::string& hashfile, bool json, bool human, std::FILE* out,
                        std::FILE* err) {
  const auto path = follow_status_path(hashfile);
  auto s = read_follow_status(path);
  if (!s) {
    std::fprintf(err, "btrdedupe: no follower has run with this hashfile: %s\n",
                 s.error().message().c_str());
    return 1;
  }
  const bool alive = s->state != "stopped" && running(s->pid);
  if (!alive && s->state != "stopped") {
    s->stop_reason = "killed: pid " + std::to_string(s->pid) + " is gone";
    s->state = "stopped";
  }
  if (json) {
    std::fprintf(out, "%s\n", to_json(*s).c_str());
    return alive ? 0 : 3;
  }
  std::fprintf(out, "follower of %s: %s\n", hashfile.c_str(),
               alive ? ("running, pid " + std::to_string(s->pid)).c_str() : "not running");
  std::fprintf(out, "  started:            %s\n", when(s->started).c_str());
  std::fprintf(out, "  state:              %s\n",
               s->state == "stopped" ? ("stopped (" + s->stop_reason + ")").c_str()
               : s->state == "waiting" ? ("waiting for " + s->waiting_for).c_str()
                                       : s->state.c_str());
  std::fprintf(out, "  cycles:             %llu (%llu found changes)\n",
               static_cast<unsigned long long>(s->cycles),
               static_cast<unsigned long long>(s->cycles_with_changes));
  std::fprintf(out, "  deduped:            %s\n", size(s->bytes_deduped, human).c_str());
  std::fprintf(out, "  freed:              %s\n", size(s->bytes_freed, human).c_str());
  std::fprintf(out, "  files read:         %llu\n", static_cast<unsigned long long>(s->files_read));
  std::fprintf(out, "  last change seen:   %s\n", when(s->last_change_seen).c_str());
  std::fprintf(out, "  last cycle:         %s, %.1f s\n", when(s->last_cycle_ended).c_str(),
               s->last_cycle_seconds);
  if (s->files_settling)
    std::fprintf(out, "  settling:           %llu files written in the last seconds\n",
                 static_cast<unsigned long long>(s->files_settling));
  std::fprintf(out, "  paused for others:  %llu times, %.0f s\n",
               static_cast<unsigned long long>(s->pauses), s->paused_seconds);
  if (!s->last_error.empty()) std::fprintf(out, "  last error:         %s\n", s->last_error.c_str());
  return alive ? 0 : 3;
}

}  // namespace btrdedupe
