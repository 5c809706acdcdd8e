// The catalog's statements as its files use them (internal to src/catalog*.cpp): a scoped
// statement and the signed-integer casts SQLite stores unsigned values through.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace btrdedupe::catalog_sql {

inline int64_t as_int(uint64_t v) {
  int64_t i;
  std::memcpy(&i, &v, sizeof i);
  return i;
}
inline uint64_t as_uint(int64_t v) {
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

}  // namespace btrdedupe::catalog_sql
