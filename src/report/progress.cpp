#include "src/report/progress.h"

#include <cinttypes>
#include <cmath>

#include "src/report/byte_size.h"
#include "src/report/run_progress.h"

namespace btrdedupe {
namespace {

double seconds_between(ProgressClock::time_point a, ProgressClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

double PhaseProgress::fraction() const {
  if (total == 0) return 0;
  return done >= total ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
}

double PhaseProgress::rate() const {
  return seconds > 0 ? static_cast<double>(done) / seconds : 0;
}

double PhaseProgress::eta_seconds() const {
  if (total == 0) return -1;
  if (done >= total) return 0;
  const double r = rate();
  if (r <= 0) return -1;
  return static_cast<double>(total - done) / r;
}

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  const auto s = static_cast<uint64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%" PRIu64 ":%02u:%02u", s / 3600,
                  static_cast<unsigned>(s / 60 % 60), static_cast<unsigned>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%u:%02u", static_cast<unsigned>(s / 60),
                  static_cast<unsigned>(s % 60));
  return buf;
}

TtyProgress::TtyProgress(std::FILE* out, std::chrono::milliseconds interval)
    : out_(out), interval_(interval), start_(ProgressClock::now()) {}

void TtyProgress::progress(const char* phase, uint64_t done, uint64_t total) {
  const auto now = ProgressClock::now();
  if (!active_ || current_.phase != phase) {
    current_ = PhaseProgress{phase, done, total, 0};
    phase_start_ = now;
    active_ = true;
    draw();
    return;
  }
  current_.done = done;
  current_.total = total;
  if (now - last_draw_ >= interval_ || (total > 0 && done >= total)) draw();
}

// Drawn with the next phase report, not now: a position for the next window arrives while
// the last phase of this one is still named ("window 3/7 · confirm" was window 2's confirm).
void TtyProgress::position(const RunPosition& where) { where_ = where; }

void TtyProgress::draw() {
  last_draw_ = ProgressClock::now();
  current_.seconds = seconds_between(phase_start_, last_draw_);
  const auto estimate = estimate_run(where_, current_, seconds_between(start_, last_draw_));
  std::fprintf(out_, "\r\033[K%s", format_run_line(where_, current_, estimate).c_str());
  std::fflush(out_);
}

void TtyProgress::finish() {
  if (active_) std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  active_ = false;
}

JsonProgress::JsonProgress(std::FILE* out, std::chrono::milliseconds interval)
    : out_(out), interval_(interval), start_(ProgressClock::now()) {}

void JsonProgress::emit(const std::string& line) {
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void JsonProgress::end_phase() {
  if (!active_) return;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"event\":\"end\",\"phase\":\"%s\",\"done\":%" PRIu64 ",\"total\":%" PRIu64
                ",\"seconds\":%.3f}",
                current_.phase.c_str(), current_.done, current_.total,
                seconds_between(phase_start_, ProgressClock::now()));
  emit(buf);
  active_ = false;
}

void JsonProgress::progress(const char* phase, uint64_t done, uint64_t total) {
  const auto now = ProgressClock::now();
  char buf[512];
  if (!active_ || current_.phase != phase) {
    end_phase();
    current_ = PhaseProgress{phase, done, total, 0};
    phase_start_ = now;
    active_ = true;
    std::snprintf(buf, sizeof buf, "{\"event\":\"phase\",\"phase\":\"%s\",\"total\":%" PRIu64
                  ",\"elapsed\":%.3f}",
                  phase, total, seconds_between(start_, now));
    emit(buf);
    last_emit_ = now;
    emitted_done_ = done;
    return;
  }
  current_.done = done;
  current_.total = total;
  const bool reached_total = total > 0 && done >= total && done != emitted_done_;
  if (now - last_emit_ < interval_ && !reached_total) return;
  last_emit_ = now;
  emitted_done_ = done;
  current_.seconds = seconds_between(phase_start_, now);
  const double eta = current_.eta_seconds();
  const double elapsed = seconds_between(start_, now);
  const auto run = estimate_run(where_, current_, elapsed);
  auto seconds_or_null = [](double s) { return s >= 0 ? std::to_string(std::lround(s)) : std::string("null"); };
  std::snprintf(buf, sizeof buf,
                "{\"event\":\"progress\",\"phase\":\"%s\",\"done\":%" PRIu64 ",\"total\":%" PRIu64
                ",\"elapsed\":%.3f,\"rate\":%.0f,\"eta\":%s,\"window\":%" PRIu64
                ",\"windows\":%" PRIu64 ",\"estimated\":%s,\"run_done\":%" PRIu64
                ",\"run_total\":%" PRIu64 ",\"run_eta\":%s}",
                phase, done, total, elapsed, current_.rate(), seconds_or_null(eta).c_str(),
                where_.window, where_.windows, where_.estimated ? "true" : "false", run.done,
                run.total, seconds_or_null(run.eta_seconds).c_str());
  emit(buf);
}

void JsonProgress::finish(int exit_code, bool stopped, int64_t net_shared_change) {
  end_phase();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"event\":\"finish\",\"exit_code\":%d,\"stopped\":%s,"
                "\"net_shared_change\":%" PRId64 ",\"elapsed\":%.3f}",
                exit_code, stopped ? "true" : "false", net_shared_change,
                seconds_between(start_, ProgressClock::now()));
  emit(buf);
}

}  // namespace btrdedupe
