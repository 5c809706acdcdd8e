// The catalog's files and anchors tables: a file's row read by key, directory or content
// hash, and rows with their anchors written and removed.
#include "src/catalog/catalog.h"

#include <algorithm>

#include "src/catalog/catalog_memory_rows.h"
#include "src/catalog/catalog_statements.h"

namespace btrdedupe {
namespace {

using catalog_sql::Stmt;
using catalog_sql::as_int;
using catalog_sql::as_uint;

// size, mtime_ns, flags, whole_hash, parent, short_hash from column `first` on.
CatalogFile row_of(const Stmt& s, int first) {
  CatalogFile f;
  f.size = as_uint(s.col(first));
  f.mtime_ns = s.col(first + 1);
  f.flags = as_uint(s.col(first + 2));
  if (!s.null(first + 3)) f.whole_hash = as_uint(s.col(first + 3));
  if (!s.null(first + 4)) f.parent = as_uint(s.col(first + 4));
  if (!s.null(first + 5)) f.short_hash = as_uint(s.col(first + 5));
  return f;
}

}  // namespace

void Catalog::write_memory_rows() const {
  if (!memory_rows_ || memory_rows_->empty() || write_error_) return;
  auto written = [&]() -> btrfs::Result<void> {
    if (auto ok = exec("SAVEPOINT memory_rows"); !ok) return ok;
    btrfs::Result<void> each;
    memory_rows_->for_each([&](const FileKey& key, const CatalogFile& file,
                               const std::vector<uint64_t>& anchors) {
      if (each) each = sql_add_file(key, file, anchors);
    });
    if (!each) return each;
    return exec("RELEASE memory_rows");
  }();
  if (!written) {
    write_error_ = written.error();
    return;
  }
  memory_rows_->clear();
  rows_in_sql_ = true;
}

size_t Catalog::held_row_bytes() const { return memory_rows_ ? memory_rows_->bytes() : 0; }

btrfs::Result<void> Catalog::memory_rows_written() const {
  if (write_error_) return *write_error_;
  return {};
}

std::unordered_map<FileKey, CatalogFile, FileKeyHash> Catalog::files() const {
  write_memory_rows();
  std::unordered_map<FileKey, CatalogFile, FileKeyHash> out;
  Stmt s(prepare(
      "SELECT subvolume, inode, size, mtime_ns, flags, whole_hash, parent, short_hash FROM files"));
  while (s && s.row()) out[{as_uint(s.col(0)), as_uint(s.col(1))}] = row_of(s, 2);
  return out;
}

void Catalog::for_each_file(
    const std::function<void(const FileKey&, const CatalogFile&)>& fn) const {
  write_memory_rows();
  // The primary key's order: a walk of the table, no sort.
  Stmt s(prepare("SELECT subvolume, inode, size, mtime_ns, flags, whole_hash, parent, "
                 "short_hash FROM files ORDER BY subvolume, inode"));
  while (s && s.row()) fn({as_uint(s.col(0)), as_uint(s.col(1))}, row_of(s, 2));
}

std::optional<CatalogFile> Catalog::file(const FileKey& key) const {
  if (memory_rows_) {
    if (const CatalogFile* held = memory_rows_->find(key)) return *held;
    if (!rows_in_sql_) return std::nullopt;
  }
  Stmt s(cached("SELECT size, mtime_ns, flags, whole_hash, parent, short_hash FROM files "
                "WHERE subvolume = ? AND inode = ?"),
         false);
  s.bind(1, as_int(key.subvolume));
  s.bind(2, as_int(key.inode));
  if (!s || !s.row()) return std::nullopt;
  return row_of(s, 0);
}

std::vector<uint64_t> Catalog::files_in_directory(uint64_t subvolume, uint64_t dir) const {
  write_memory_rows();
  std::vector<uint64_t> out;
  Stmt s(cached("SELECT inode FROM files WHERE subvolume = ? AND parent = ?"), false);
  s.bind(1, as_int(subvolume));
  s.bind(2, as_int(dir));
  while (s && s.row()) out.push_back(as_uint(s.col(0)));
  return out;
}

uint64_t Catalog::file_count(uint64_t subvolume) const {
  write_memory_rows();
  Stmt s(prepare("SELECT count(*) FROM files WHERE subvolume = ?"));
  s.bind(1, as_int(subvolume));
  return s && s.row() ? as_uint(s.col(0)) : 0;
}

// Held rows shadow written ones: a key held in memory has its current row there.
std::vector<FileKey> Catalog::files_with_hash(uint64_t hash) const {
  std::vector<FileKey> out;
  if (memory_rows_) {
    out = memory_rows_->with_hash(hash);
    if (!rows_in_sql_) return out;
  }
  const size_t held = out.size();
  Stmt s(cached("SELECT subvolume, inode FROM files WHERE whole_hash = ?"), false);
  s.bind(1, as_int(hash));
  while (s && s.row()) {
    const FileKey key{as_uint(s.col(0)), as_uint(s.col(1))};
    if (!memory_rows_ || !memory_rows_->find(key)) out.push_back(key);
  }
  if (held) std::inplace_merge(out.begin(), out.begin() + held, out.end());
  return out;
}

// A written row's anchors stay when it is held again (as add_file's do in SQLite).
std::vector<FileKey> Catalog::files_with_anchor(uint64_t hash) const {
  std::vector<FileKey> out;
  if (memory_rows_) {
    out = memory_rows_->with_anchor(hash);
    if (!rows_in_sql_) return out;
  }
  const size_t held = out.size();
  Stmt s(cached("SELECT subvolume, inode FROM anchors WHERE hash = ?"), false);
  s.bind(1, as_int(hash));
  while (s && s.row()) out.push_back({as_uint(s.col(0)), as_uint(s.col(1))});
  if (held) {
    std::inplace_merge(out.begin(), out.begin() + held, out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

btrfs::Result<void> Catalog::put_file(const FileKey& key, const CatalogFile& file,
                                      const std::vector<uint64_t>& anchors) {
  if (auto ok = remove_file(key); !ok) return ok;
  return add_file(key, file, anchors);
}

btrfs::Result<void> Catalog::add_file(const FileKey& key, const CatalogFile& file,
                                      const std::vector<uint64_t>& anchors) {
  if (!memory_rows_) return sql_add_file(key, file, anchors);
  if (auto ok = memory_rows_written(); !ok) return ok;
  memory_rows_->add(key, file, anchors);
  if (memory_rows_->bytes() > memory_rows_bytes_) write_memory_rows();
  return memory_rows_written();
}

btrfs::Result<void> Catalog::sql_add_file(const FileKey& key, const CatalogFile& file,
                                          const std::vector<uint64_t>& anchors) const {
  Stmt f(cached("INSERT OR REPLACE INTO files"
                "(subvolume, inode, size, mtime_ns, flags, whole_hash, parent, short_hash) "
                "VALUES(?, ?, ?, ?, ?, ?, ?, ?)"),
         false);
  f.bind(1, as_int(key.subvolume));
  f.bind(2, as_int(key.inode));
  f.bind(3, as_int(file.size));
  f.bind(4, file.mtime_ns);
  f.bind(5, as_int(file.flags));
  if (file.whole_hash) f.bind(6, as_int(*file.whole_hash));
  if (file.parent) f.bind(7, as_int(file.parent));
  if (file.short_hash) f.bind(8, as_int(*file.short_hash));
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
  if (memory_rows_) {
    memory_rows_->remove(key);
    if (!rows_in_sql_) return memory_rows_written();
  }
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
  if (memory_rows_ && (memory_rows_->set_parent(key, parent) || !rows_in_sql_)) return {};
  Stmt s(cached("UPDATE files SET parent = ? WHERE subvolume = ? AND inode = ?"), false);
  s.bind(1, as_int(parent));
  s.bind(2, as_int(key.subvolume));
  s.bind(3, as_int(key.inode));
  if (s.step() != SQLITE_DONE) return error("updating a file's directory");
  return {};
}

btrfs::Result<void> Catalog::set_short_hash(const FileKey& key, uint64_t hash) {
  if (memory_rows_ && (memory_rows_->set_short_hash(key, hash) || !rows_in_sql_)) return {};
  Stmt s(cached("UPDATE files SET short_hash = ? WHERE subvolume = ? AND inode = ?"), false);
  s.bind(1, as_int(hash));
  s.bind(2, as_int(key.subvolume));
  s.bind(3, as_int(key.inode));
  if (s.step() != SQLITE_DONE) return error("updating a file's data hash");
  return {};
}

btrfs::Result<void> Catalog::remove_subvolume_files(uint64_t subvolume) {
  write_memory_rows();
  if (auto ok = memory_rows_written(); !ok) return ok;
  static constexpr const char* kDeletes[] = {"DELETE FROM files WHERE subvolume = ?",
                                             "DELETE FROM anchors WHERE subvolume = ?"};
  for (const char* sql : kDeletes) {
    Stmt s(prepare(sql));
    s.bind(1, as_int(subvolume));
    if (s.step() != SQLITE_DONE) return error("removing a subvolume's rows");
  }
  return {};
}

}  // namespace btrdedupe
