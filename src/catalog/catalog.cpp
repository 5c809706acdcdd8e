// Opening a catalog: the lock, the format check that leaves a foreign file untouched, the
// schema of a new one and the upgrade of an older one (its tables are in catalog_*.cpp).
#include "src/catalog/catalog.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cstring>

#include "src/catalog/catalog_memory_rows.h"
#include "src/catalog/catalog_statements.h"

namespace btrdedupe {
namespace {

constexpr int32_t kApplicationId = 0x62747264;  // "btrd"

using catalog_sql::Stmt;

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE subvolumes(id INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
CREATE TABLE files(
  subvolume INTEGER NOT NULL, inode INTEGER NOT NULL,
  size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, flags INTEGER NOT NULL,
  whole_hash INTEGER, parent INTEGER, short_hash INTEGER,
  PRIMARY KEY(subvolume, inode)) WITHOUT ROWID;
CREATE INDEX files_by_hash ON files(whole_hash) WHERE whole_hash IS NOT NULL;
CREATE INDEX files_by_parent ON files(subvolume, parent);
CREATE TABLE anchors(
  hash INTEGER NOT NULL, subvolume INTEGER NOT NULL, inode INTEGER NOT NULL,
  PRIMARY KEY(hash, subvolume, inode)) WITHOUT ROWID;
CREATE INDEX anchors_by_file ON anchors(subvolume, inode);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, started INTEGER NOT NULL, finished INTEGER NOT NULL,
  roots TEXT NOT NULL, files INTEGER NOT NULL, bytes_read INTEGER NOT NULL,
  bytes_deduped INTEGER NOT NULL, exit_code INTEGER NOT NULL);
)sql";

// The upgrades from format 1 and 2 forget the generations, so that the next run reads the
// trees whole. Format 1 to 2: rows gain their directory (that whole read fills it in).
constexpr const char* kUpgradeFrom1 = R"sql(
ALTER TABLE files ADD COLUMN parent INTEGER;
CREATE INDEX files_by_parent ON files(subvolume, parent);
)sql";
// Format 2 to 3: block hashes give way to anchors, which only a file's sums give: the file
// rows go too, and that whole read writes them afresh from the csum tree, as a first run.
constexpr const char* kUpgradeFrom2 = R"sql(
DELETE FROM files;
DROP TABLE blocks;
CREATE TABLE anchors(
  hash INTEGER NOT NULL, subvolume INTEGER NOT NULL, inode INTEGER NOT NULL,
  PRIMARY KEY(hash, subvolume, inode)) WITHOUT ROWID;
CREATE INDEX anchors_by_file ON anchors(subvolume, inode);
)sql";
// Format 3 to 4: rows gain the proven data hash of one-sector files (NULL until proven);
// rows and generations stay.
constexpr const char* kUpgradeFrom3 = "ALTER TABLE files ADD COLUMN short_hash INTEGER;";

// One connection per thread (SQLITE_OPEN_NOMUTEX), and no global count of SQLite's
// allocations: both take a mutex on every call (3.6% of a windowed report's samples).
int open_flags() {
  static const bool configured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);  // refused once SQLite started: no matter
    return true;
  }();
  (void)configured;
  return SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
}

}  // namespace

btrfs::Result<std::unique_ptr<Catalog>> Catalog::open(const std::string& path) {
  std::unique_ptr<Catalog> c(new Catalog());  // private constructor
  c->path_ = path;
  auto fd = btrfs::Fd::open(path, O_RDWR | O_CREAT, 0600);  // fingerprints are private
  if (!fd) return btrfs::Error{fd.error().code, "hashfile " + path + ": cannot open for writing"};
  if (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      return btrfs::Error{EBUSY, "hashfile " + path + " is in use by another btrdedupe run"};
    return btrfs::errno_error("locking hashfile " + path);
  }
  c->lock_ = std::move(*fd);
  if (sqlite3_open_v2(path.c_str(), &c->db_, open_flags(), nullptr) != SQLITE_OK)
    return c->error("opening hashfile");
  sqlite3_busy_timeout(c->db_, 5000);
  if (auto ok = c->initialize(); !ok) return ok.error();
  return c;
}

btrfs::Result<std::unique_ptr<Catalog>> Catalog::open_in_memory() {
  std::unique_ptr<Catalog> c(new Catalog());  // private constructor
  c->path_ = ":memory:";
  if (sqlite3_open_v2(":memory:", &c->db_, open_flags(), nullptr) != SQLITE_OK)
    return c->error("opening an in-memory catalog");
  if (auto ok = c->initialize(); !ok) return ok.error();
  return c;
}

btrfs::Result<void> Catalog::initialize() {
  // Identify before writing anything: a foreign file must stay exactly as it is.
  int64_t app = 0, version = 0, tables = 0;
  {
    Stmt s(prepare("PRAGMA application_id"));
    if (!s || !s.row()) return error("reading hashfile (not an SQLite database?)");
    app = s.col(0);
  }
  {
    Stmt s(prepare("PRAGMA user_version"));
    if (!s || !s.row()) return error("reading hashfile");
    version = s.col(0);
  }
  {
    Stmt s(prepare("SELECT count(*) FROM sqlite_master"));
    if (!s || !s.row()) return error("reading hashfile");
    tables = s.col(0);
  }
  if (app == 0 && tables == 0) {
    if (auto ok = exec("PRAGMA journal_mode=WAL"); !ok) return ok;
    if (auto ok = exec("BEGIN"); !ok) return ok;
    if (auto ok = exec(kSchema); !ok) return ok;
    const std::string ids = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                            "; PRAGMA user_version=" + std::to_string(kCatalogFormat);
    if (auto ok = exec(ids.c_str()); !ok) return ok;
    return exec("COMMIT");
  }
  if (app != kApplicationId)
    return btrfs::Error{EINVAL, "hashfile " + path_ +
                                    " is not a btrdedupe hashfile (another program's database?): "
                                    "left untouched"};
  if (version > kCatalogFormat)
    return btrfs::Error{EINVAL, "hashfile " + path_ + " has format " + std::to_string(version) +
                                    ", newer than this btrdedupe understands (" +
                                    std::to_string(kCatalogFormat) + "): left untouched"};
  if (version < 1)
    return btrfs::Error{EINVAL, "hashfile " + path_ + " has the unknown format " +
                                    std::to_string(version) + ": remove it to rebuild it"};
  if (auto ok = exec("PRAGMA journal_mode=WAL"); !ok) return ok;
  if (version < kCatalogFormat) {
    if (auto ok = upgrade(version); !ok) {
      (void)exec("ROLLBACK");
      return ok;
    }
    upgraded_from_ = static_cast<int>(version);
  }
  return {};
}

btrfs::Result<void> Catalog::use_for_one_run(size_t memory_rows_bytes) {
  memory_rows_ = std::make_unique<CatalogMemoryRows>();
  memory_rows_bytes_ = memory_rows_bytes;
  return exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF");
}

btrfs::Result<void> Catalog::upgrade(int64_t from) {
  if (auto ok = exec("BEGIN IMMEDIATE"); !ok) return ok;
  if (from < 2)
    if (auto ok = exec(kUpgradeFrom1); !ok) return ok;
  if (from < 3) {
    if (auto ok = exec(kUpgradeFrom2); !ok) return ok;
    if (auto ok = exec("DELETE FROM subvolumes"); !ok) return ok;
  }
  if (auto ok = exec(kUpgradeFrom3); !ok) return ok;
  const std::string done = "PRAGMA user_version=" + std::to_string(kCatalogFormat) + ";";
  if (auto ok = exec(done.c_str()); !ok) return ok;
  return exec("COMMIT");
}

Catalog::~Catalog() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  if (db_) sqlite3_close(db_);
}

}  // namespace btrdedupe
