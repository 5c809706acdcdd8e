#include "src/catalog.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cstring>

namespace btrdedupe {
namespace {

constexpr int32_t kApplicationId = 0x62747264;  // "btrd"

int64_t as_int(uint64_t v) {
  int64_t i;
  std::memcpy(&i, &v, sizeof i);
  return i;
}
uint64_t as_uint(int64_t v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// Finalizes a statement when it goes out of scope.
class Stmt {
 public:
  // owned: finalize at scope exit; otherwise a cached statement that is only reset.
  explicit Stmt(sqlite3_stmt* s, bool owned = true) : s_(s), owned_(owned) {}
  ~Stmt() {
    if (owned_) sqlite3_finalize(s_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind_text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  bool row() { return sqlite3_step(s_) == SQLITE_ROW; }
  int step() { return sqlite3_step(s_); }
  int64_t col(int i) const { return sqlite3_column_int64(s_, i); }
  bool null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
  std::string text(int i) const {
    const auto* p = sqlite3_column_text(s_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  sqlite3_stmt* s_;
  bool owned_;
};

// size, mtime_ns, flags, whole_hash, parent from column `first` on.
CatalogFile row_of(const Stmt& s, int first) {
  CatalogFile f;
  f.size = as_uint(s.col(first));
  f.mtime_ns = s.col(first + 1);
  f.flags = as_uint(s.col(first + 2));
  if (!s.null(first + 3)) f.whole_hash = as_uint(s.col(first + 3));
  if (!s.null(first + 4)) f.parent = as_uint(s.col(first + 4));
  return f;
}

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE subvolumes(id INTEGER PRIMARY KEY, generation INTEGER NOT NULL);
CREATE TABLE files(
  subvolume INTEGER NOT NULL, inode INTEGER NOT NULL,
  size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, flags INTEGER NOT NULL,
  whole_hash INTEGER, parent INTEGER,
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

// Each upgrade forgets the generations, so that the next run reads the trees whole.
// Format 1 to 2: rows gain their directory (that whole read fills it in).
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

btrfs::Result<void> Catalog::use_for_one_run() {
  return exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF");
}

btrfs::Result<void> Catalog::upgrade(int64_t from) {
  if (auto ok = exec("BEGIN IMMEDIATE"); !ok) return ok;
  if (from < 2)
    if (auto ok = exec(kUpgradeFrom1); !ok) return ok;
  if (auto ok = exec(kUpgradeFrom2); !ok) return ok;
  const std::string done =
      "DELETE FROM subvolumes; PRAGMA user_version=" + std::to_string(kCatalogFormat) + ";";
  if (auto ok = exec(done.c_str()); !ok) return ok;
  return exec("COMMIT");
}

Catalog::~Catalog() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  if (db_) sqlite3_close(db_);
}

sqlite3_stmt* Catalog::cached(const char* sql) const {
  auto& s = statements_[sql];
  if (!s) s = prepare(sql);
  if (s) {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  return s;
}

btrfs::Error Catalog::error(const std::string& what) const {
  return btrfs::Error{0, "hashfile " + path_ + ": " + what + ": " +
                             (db_ ? sqlite3_errmsg(db_) : "out of memory")};
}

sqlite3_stmt* Catalog::prepare(const char* sql) const {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return nullptr;
  return s;
}

btrfs::Result<void> Catalog::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return btrfs::Error{0, "hashfile " + path_ + ": " + m};
  }
  return {};
}

btrfs::Result<void> Catalog::bind(const std::string& fsid) {
  Stmt get(prepare("SELECT value FROM meta WHERE key='fsid'"));
  if (!get) return error("reading the filesystem id");
  if (get.row()) {
    if (get.text(0) != fsid)
      return btrfs::Error{EINVAL, "hashfile " + path_ + " belongs to filesystem " + get.text(0) +
                                      ", not " + fsid + ": left untouched"};
    return {};
  }
  Stmt put(prepare("INSERT INTO meta(key, value) VALUES('fsid', ?)"));
  put.bind_text(1, fsid);
  if (put.step() != SQLITE_DONE) return error("recording the filesystem id");
  return {};
}

std::optional<CatalogScope> Catalog::scope() const {
  Stmt s(prepare("SELECT key, value FROM meta WHERE key IN ('roots', 'options', 'dedupe')"));
  CatalogScope scope;
  bool any = false;
  while (s && s.row()) {
    any = true;
    if (s.text(0) == "options") {
      scope.options = s.text(1);
      continue;
    }
    if (s.text(0) == "dedupe") {
      scope.dedupe = s.text(1) == "1";
      continue;
    }
    const std::string all = s.text(1);
    for (size_t start = 0; start < all.size();) {
      const size_t end = all.find('\n', start);
      scope.roots.push_back(all.substr(start, end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  if (!any) return std::nullopt;
  return scope;
}

btrfs::Result<void> Catalog::set_scope(const CatalogScope& scope) {
  const auto old = this->scope();
  Stmt d(prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('dedupe', ?)"));
  d.bind_text(1, scope.dedupe ? "1" : "0");
  if (d.step() != SQLITE_DONE) return error("recording the run's mode");
  if (old && old->roots == scope.roots && old->options == scope.options) return {};
  std::string roots;
  for (const auto& r : scope.roots) roots += (roots.empty() ? "" : "\n") + r;
  if (auto ok = exec("DELETE FROM subvolumes; DELETE FROM files; DELETE FROM anchors;"); !ok) return ok;
  Stmt put(prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('roots', ?), ('options', ?)"));
  put.bind_text(1, roots);
  put.bind_text(2, scope.options);
  if (put.step() != SQLITE_DONE) return error("recording the roots");
  return {};
}

bool Catalog::pending() const {
  Stmt s(prepare("SELECT value FROM meta WHERE key='pending'"));
  return s && s.row() && s.text(0) == "1";
}

btrfs::Result<void> Catalog::set_pending(bool pending) {
  Stmt put(prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('pending', ?)"));
  put.bind_text(1, pending ? "1" : "0");
  if (put.step() != SQLITE_DONE) return error("recording whether duplicates wait for a dedupe");
  return {};
}

std::unordered_map<uint64_t, uint64_t> Catalog::subvolume_generations() const {
  std::unordered_map<uint64_t, uint64_t> out;
  Stmt s(prepare("SELECT id, generation FROM subvolumes"));
  while (s && s.row()) out[as_uint(s.col(0))] = as_uint(s.col(1));
  return out;
}

std::unordered_map<FileKey, CatalogFile, FileKeyHash> Catalog::files() const {
  std::unordered_map<FileKey, CatalogFile, FileKeyHash> out;
  Stmt s(prepare("SELECT subvolume, inode, size, mtime_ns, flags, whole_hash, parent FROM files"));
  while (s && s.row()) out[{as_uint(s.col(0)), as_uint(s.col(1))}] = row_of(s, 2);
  return out;
}

void Catalog::for_each_file(
    const std::function<void(const FileKey&, const CatalogFile&)>& fn) const {
  // The primary key's order: a walk of the table, no sort.
  Stmt s(prepare("SELECT subvolume, inode, size, mtime_ns, flags, whole_hash, parent FROM files "
                 "ORDER BY subvolume, inode"));
  while (s && s.row()) fn({as_uint(s.col(0)), as_uint(s.col(1))}, row_of(s, 2));
}

std::optional<CatalogFile> Catalog::file(const FileKey& key) const {
  Stmt s(cached("SELECT size, mtime_ns, flags, whole_hash, parent FROM files "
                "WHERE subvolume = ? AND inode = ?"),
         false);
  s.bind(1, as_int(key.subvolume));
  s.bind(2, as_int(key.inode));
  if (!s || !s.row()) return std::nullopt;
  return row_of(s, 0);
}

std::vector<uint64_t> Catalog::files_in_directory(uint64_t subvolume, uint64_t dir) const {
  std::vector<uint64_t> out;
  Stmt s(cached("SELECT inode FROM files WHERE subvolume = ? AND parent = ?"), false);
  s.bind(1, as_int(subvolume));
  s.bind(2, as_int(dir));
  while (s && s.row()) out.push_back(as_uint(s.col(0)));
  return out;
}

uint64_t Catalog::file_count(uint64_t subvolume) const {
  Stmt s(prepare("SELECT count(*) FROM files WHERE subvolume = ?"));
  s.bind(1, as_int(subvolume));
  return s && s.row() ? as_uint(s.col(0)) : 0;
}

std::vector<FileKey> Catalog::files_with_hash(uint64_t hash) const {
  std::vector<FileKey> out;
  Stmt s(cached("SELECT subvolume, inode FROM files WHERE whole_hash = ?"), false);
  s.bind(1, as_int(hash));
  while (s && s.row()) out.push_back({as_uint(s.col(0)), as_uint(s.col(1))});
  return out;
}

std::vector<FileKey> Catalog::files_with_anchor(uint64_t hash) const {
  std::vector<FileKey> out;
  Stmt s(cached("SELECT subvolume, inode FROM anchors WHERE hash = ?"), false);
  s.bind(1, as_int(hash));
  while (s && s.row()) out.push_back({as_uint(s.col(0)), as_uint(s.col(1))});
  return out;
}

btrfs::Result<void> Catalog::begin() { return exec("BEGIN IMMEDIATE"); }
btrfs::Result<void> Catalog::commit() { return exec("COMMIT"); }

btrfs::Result<void> Catalog::put_file(const FileKey& key, const CatalogFile& file,
                                      const std::vector<uint64_t>& anchors) {
  if (auto ok = remove_file(key); !ok) return ok;
  return add_file(key, file, anchors);
}

btrfs::Result<void> Catalog::add_file(const FileKey& key, const CatalogFile& file,
                                      const std::vector<uint64_t>& anchors) {
  Stmt f(cached("INSERT OR REPLACE INTO files"
                "(subvolume, inode, size, mtime_ns, flags, whole_hash, parent) "
                "VALUES(?, ?, ?, ?, ?, ?, ?)"),
         false);
  f.bind(1, as_int(key.subvolume));
  f.bind(2, as_int(key.inode));
  f.bind(3, as_int(file.size));
  f.bind(4, file.mtime_ns);
  f.bind(5, as_int(file.flags));
  if (file.whole_hash) f.bind(6, as_int(*file.whole_hash));
  if (file.parent) f.bind(7, as_int(file.parent));
  if (f.step() != SQLITE_DONE) return error("writing a file row");
  Stmt a(cached("INSERT OR IGNORE INTO anchors(hash, subvolume, inode) VALUES(?, ?, ?)"), false);
  for (uint64_t hash : anchors) {
    sqlite3_reset(a.get());
    a.bind(1, as_int(hash));
    a.bind(2, as_int(key.subvolume));
    a.bind(3, as_int(key.inode));
    if (a.step() != SQLITE_DONE) return error("writing an anchor row");
  }
  return {};
}

btrfs::Result<void> Catalog::remove_file(const FileKey& key) {
  static constexpr const char* kDeletes[] = {"DELETE FROM files WHERE subvolume = ? AND inode = ?",
                                             "DELETE FROM anchors WHERE subvolume = ? AND inode = ?"};
  for (const char* sql : kDeletes) {
    Stmt s(cached(sql), false);
    s.bind(1, as_int(key.subvolume));
    s.bind(2, as_int(key.inode));
    if (s.step() != SQLITE_DONE) return error("removing a file row");
  }
  return {};
}

btrfs::Result<void> Catalog::set_parent(const FileKey& key, uint64_t parent) {
  Stmt s(cached("UPDATE files SET parent = ? WHERE subvolume = ? AND inode = ?"), false);
  s.bind(1, as_int(parent));
  s.bind(2, as_int(key.subvolume));
  s.bind(3, as_int(key.inode));
  if (s.step() != SQLITE_DONE) return error("updating a file's directory");
  return {};
}

btrfs::Result<void> Catalog::remove_subvolume_files(uint64_t subvolume) {
  static constexpr const char* kDeletes[] = {"DELETE FROM files WHERE subvolume = ?",
                                             "DELETE FROM anchors WHERE subvolume = ?"};
  for (const char* sql : kDeletes) {
    Stmt s(prepare(sql));
    s.bind(1, as_int(subvolume));
    if (s.step() != SQLITE_DONE) return error("removing a subvolume's rows");
  }
  return {};
}

btrfs::Result<void> Catalog::set_subvolume_generations(
    const std::unordered_map<uint64_t, uint64_t>& gens) {
  if (auto ok = exec("DELETE FROM subvolumes"); !ok) return ok;
  Stmt s(prepare("INSERT INTO subvolumes(id, generation) VALUES(?, ?)"));
  for (const auto& [id, gen] : gens) {
    sqlite3_reset(s.get());
    s.bind(1, as_int(id));
    s.bind(2, as_int(gen));
    if (s.step() != SQLITE_DONE) return error("writing subvolume generations");
  }
  return {};
}

btrfs::Result<void> Catalog::add_run(const RunRecord& run, bool of_scope) {
  // meta.scope_run: the id of the latest run of the catalog's roots. Catalogs from before
  // it have none, and their latest run is one: named at the first other run.
  if (!of_scope) {
    Stmt have(prepare("SELECT 1 FROM meta WHERE key='scope_run'"));
    if (!(have && have.row()))
      if (auto ok = exec("INSERT INTO meta(key, value) "
                         "SELECT 'scope_run', id FROM runs ORDER BY id DESC LIMIT 1");
          !ok)
        return ok;
  }
  Stmt s(prepare("INSERT INTO runs(started, finished, roots, files, bytes_read, bytes_deduped, "
                 "exit_code) VALUES(?, ?, ?, ?, ?, ?, ?)"));
  s.bind(1, run.started);
  s.bind(2, run.finished);
  s.bind_text(3, run.roots);
  s.bind(4, as_int(run.files));
  s.bind(5, as_int(run.bytes_read));
  s.bind(6, as_int(run.bytes_deduped));
  s.bind(7, run.exit_code);
  if (s.step() != SQLITE_DONE) return error("recording the run");
  if (of_scope) {
    Stmt put(prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('scope_run', ?)"));
    put.bind_text(1, std::to_string(sqlite3_last_insert_rowid(db_)));
    if (put.step() != SQLITE_DONE) return error("recording the run");
  }
  return {};
}

std::vector<RunRecord> Catalog::runs() const {
  std::vector<RunRecord> out;
  Stmt s(prepare("SELECT started, finished, roots, files, bytes_read, bytes_deduped, exit_code "
                 "FROM runs ORDER BY id"));
  while (s && s.row()) {
    RunRecord r;
    r.started = s.col(0);
    r.finished = s.col(1);
    r.roots = s.text(2);
    r.files = as_uint(s.col(3));
    r.bytes_read = as_uint(s.col(4));
    r.bytes_deduped = as_uint(s.col(5));
    r.exit_code = static_cast<int>(s.col(6));
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<int64_t> Catalog::last_run_started() const {
  Stmt s(prepare("SELECT CASE WHEN EXISTS(SELECT 1 FROM meta WHERE key='scope_run') "
                 "THEN (SELECT started FROM runs WHERE id = "
                 "(SELECT CAST(value AS INTEGER) FROM meta WHERE key='scope_run')) "
                 "ELSE (SELECT max(started) FROM runs) END"));
  if (!s || !s.row() || s.null(0)) return std::nullopt;
  return s.col(0);
}

Catalog::Counts Catalog::counts() const {
  Counts c;
  {
    Stmt s(prepare("SELECT count(*), count(whole_hash), coalesce(sum(size), 0) FROM files"));
    if (s && s.row()) {
      c.files = as_uint(s.col(0));
      c.files_with_hash = as_uint(s.col(1));
      c.bytes = as_uint(s.col(2));
    }
  }
  {
    Stmt s(prepare("SELECT count(*) FROM anchors"));
    if (s && s.row()) c.anchors = as_uint(s.col(0));
  }
  {
    Stmt s(prepare("SELECT count(*), sum(n - 1), sum((n - 1) * size) FROM "
                   "(SELECT count(*) AS n, max(size) AS size FROM files "
                   "WHERE whole_hash IS NOT NULL GROUP BY whole_hash HAVING n > 1)"));
    if (s && s.row()) {
      c.duplicate_groups = as_uint(s.col(0));
      c.duplicate_files = as_uint(s.col(1));
      c.duplicate_bytes = as_uint(s.col(2));
    }
  }
  return c;
}

std::optional<std::string> Catalog::fsid() const {
  Stmt s(prepare("SELECT value FROM meta WHERE key='fsid'"));
  if (s && s.row()) return s.text(0);
  return std::nullopt;
}

std::unordered_map<uint64_t, uint64_t> Catalog::files_per_subvolume() const {
  std::unordered_map<uint64_t, uint64_t> out;
  Stmt s(prepare("SELECT subvolume, count(*) FROM files GROUP BY subvolume"));
  while (s && s.row()) out[as_uint(s.col(0))] = as_uint(s.col(1));
  return out;
}

btrfs::Result<void> Catalog::forget_subvolume(uint64_t id) {
  Stmt s(prepare("DELETE FROM subvolumes WHERE id = ?"));
  s.bind(1, as_int(id));
  if (s.step() != SQLITE_DONE) return error("forgetting a subvolume's generation");
  return {};
}

}  // namespace btrdedupe
