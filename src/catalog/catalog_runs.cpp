// What the catalog knows of its past runs: each subvolume's generation when it was last
// scanned whole, and the history of runs (-L, and the quiet time an incremental run trusts).
#include "src/catalog/catalog.h"
#include "src/catalog/catalog_statements.h"

namespace btrdedupe {

using catalog_sql::Stmt;
using catalog_sql::as_int;
using catalog_sql::as_uint;

std::unordered_map<uint64_t, uint64_t> Catalog::subvolume_generations() const {
  std::unordered_map<uint64_t, uint64_t> out;
  Stmt s(prepare("SELECT id, generation FROM subvolumes"));
  while (s && s.row()) out[as_uint(s.col(0))] = as_uint(s.col(1));
  return out;
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

btrfs::Result<void> Catalog::forget_subvolume(uint64_t id) {
  Stmt s(prepare("DELETE FROM subvolumes WHERE id = ?"));
  s.bind(1, as_int(id));
  if (s.step() != SQLITE_DONE) return error("forgetting a subvolume's generation");
  return {};
}

}  // namespace btrdedupe
