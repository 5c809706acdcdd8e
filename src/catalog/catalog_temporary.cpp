// A session's catalog in a temporary file, for a windowed run without --hashfile: made
// on open_temporary(), removed with the session or by the next run if its run died.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "src/catalog/catalog_session.h"

namespace btrdedupe {
namespace {

constexpr const char* kTemporaryPrefix = "btrdedupe-window-";
constexpr const char* kTemporarySuffixes[] = {"", "-wal", "-shm", "-journal"};

// Temporary catalogs are named after their run's pid: a run that died (SIGKILL, a crash)
// could not remove its own, the next one does.
void remove_dead_runs_catalogs(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTemporaryPrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::strlen(kTemporaryPrefix));
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (pid <= 0 || end == rest.c_str() || *end != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlink(entry.path().c_str());
  }
}

}  // namespace

btrfs::Result<std::unique_ptr<CatalogSession>> CatalogSession::open_temporary(
    const JobOptions& options, const RootReader& reader) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/var/tmp";
  remove_dead_runs_catalogs(dir);
  std::string path =
      dir + "/" + kTemporaryPrefix + std::to_string(::getpid()) + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return btrfs::errno_error("creating a temporary catalog in " + path);
  ::close(fd);
  auto catalog = Catalog::open(path);
  if (!catalog) {
    ::unlink(path.c_str());
    return catalog.error();
  }
  // A dedupe run's first pass writes a row for every file, not two per content (CatalogSession::
  // scratch_rows_only): held rows past a few MiB would only add to its peak (62.5 MiB with
  // 16 MiB on 8 copies of linux-source).
  const size_t held = options.dedupe ? Catalog::kOneRunMemoryRowsBytes / 4
                                     : Catalog::kOneRunMemoryRowsBytes;
  if (auto ok = (*catalog)->use_for_one_run(held); !ok) {
    catalog->reset();
    ::unlink(path.c_str());
    return ok.error();
  }
  auto s = std::make_unique<CatalogSession>(Made{}, std::move(*catalog));
  s->temporary_ = path;
  s->reader_ = &reader;
  s->csums_ = reader.checksums();
  s->block_size_ = options.block_size;
  return s;
}

CatalogSession::~CatalogSession() {
  if (temporary_.empty()) return;
  catalog_.reset();  // closed before its files go
  for (const char* suffix : kTemporarySuffixes) ::unlink((temporary_ + suffix).c_str());
}

}  // namespace btrdedupe
