// The catalog's meta table: the filesystem it is bound to, the scope its rows were made
// for, and whether duplicates found earlier may still wait for a dedupe.
#include "src/catalog/catalog.h"
#include "src/catalog/catalog_statements.h"

namespace btrdedupe {

using catalog_sql::Stmt;

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

std::optional<std::string> Catalog::fsid() const {
  Stmt s(prepare("SELECT value FROM meta WHERE key='fsid'"));
  if (s && s.row()) return s.text(0);
  return std::nullopt;
}

}  // namespace btrdedupe
