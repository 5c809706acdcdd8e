// Catalog's way to SQLite: statements prepared or kept prepared, plain SQL, its errors and
// the run's transaction; apart so each table's file holds only its own queries.
#include "src/catalog/catalog.h"

namespace btrdedupe {

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

btrfs::Result<void> Catalog::exec(const char* sql) const {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return btrfs::Error{0, "hashfile " + path_ + ": " + m};
  }
  return {};
}

btrfs::Result<void> Catalog::begin() {
  if (auto ok = exec("BEGIN IMMEDIATE"); !ok) return ok;
  writing_ = true;
  return {};
}

btrfs::Result<void> Catalog::commit() {
  writing_ = false;
  if (auto ok = memory_rows_written(); !ok) return ok;
  return exec("COMMIT");
}

}  // namespace btrdedupe
