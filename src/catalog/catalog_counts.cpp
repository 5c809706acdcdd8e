// The catalog's totals for -L / --stats: apart from the tables a run updates, as only the
// listing reads them.
#include "src/catalog/catalog.h"
#include "src/catalog/catalog_statements.h"

namespace btrdedupe {

using catalog_sql::Stmt;
using catalog_sql::as_uint;

Catalog::Counts Catalog::counts() const {
  write_memory_rows();
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

std::unordered_map<uint64_t, uint64_t> Catalog::files_per_subvolume() const {
  write_memory_rows();
  std::unordered_map<uint64_t, uint64_t> out;
  Stmt s(prepare("SELECT subvolume, count(*) FROM files GROUP BY subvolume"));
  while (s && s.row()) out[as_uint(s.col(0))] = as_uint(s.col(1));
  return out;
}

}  // namespace btrdedupe
