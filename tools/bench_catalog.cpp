// bench-catalog: does matching a batch against the hashfile cost time in proportion to the
// batch, not to the catalog? And what does a catalogued file cost on disk and in memory?
//
// Fills a fresh catalog (the real Catalog class, its own SQL) with N synthetic rows, in
// transactions of --txn-files: sizes drawn from a lognormal (sigma of linux-source-6.1's
// file sizes, mean --mean-kib), one random 64-bit whole-file hash per file, anchor hashes at
// the density the matcher's winnowing selects for the default -b of 128 KiB (one per 64 KiB
// on average; none for a file under 128 KiB; see catalog_anchors()), 5% of the files with
// the content of an earlier file (same hash, same anchors), subvolumes of 80,000 files whose
// inodes interleave with their directories' as a real tree's do. Every row is a function
// of its index and --seed: the tool holds none of them in memory.
//
// Then, for each batch size B, times what fingerprint_incremental does for a window of B
// files: files_with_hash for each file's whole-file hash, files_with_anchor for each of its
// anchors, put_file for its row, then file() for each twin found (at most two per
// hash, as a window takes them); half the batch carries content already catalogued, half
// new hashes. The commit is timed apart (a windowed run commits once, at its end). The
// batch's rows are removed again, untimed, so every repetition sees N rows. Warm: the
// hashfile is read whole into the page cache first and the catalog stays open. --cold
// (after every warm pass): before each repetition the catalog is closed, `sync`,
// `echo 3 > /proc/sys/vm/drop_caches` (root), and opened again.
//
// Prints plain lines, then one JSON line starting with {"bench":"catalog". A maintainer's
// tool, not installed. Example: nice -n 19 build/bench-catalog --files 1000000 --cold
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "src/catalog/catalog.h"

namespace {

using btrdedupe::Catalog;
using btrdedupe::CatalogFile;
using btrdedupe::FileKey;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMinRun = 128 * 1024;        // the default -b
constexpr uint64_t kAnchorSpacing = 64 * 1024;  // 2/(w+1) of the sectors, w = 31
constexpr uint64_t kFilesPerSubvolume = 80000;  // about one linux-source tree
constexpr uint64_t kFilesPerDirectory = 16;
constexpr uint64_t kFirstInode = 257;           // BTRFS_FIRST_FREE_OBJECTID
constexpr uint64_t kFirstSubvolume = 256;
constexpr double kSigma = 1.618;  // stddev of ln(size) over linux-source-6.1's files
constexpr uint32_t kDuplicatePercent = 5;
constexpr size_t kTwinsPerHash = 2;  // kWindowTwinsPerHash in catalog_twins.cpp
constexpr uint64_t kNewContent = 1ULL << 48;  // content ids of the batches' new files

struct Options {
  std::string dir = "/var/tmp";
  uint64_t files = 1000000;
  uint64_t txn_files = 100000;
  std::vector<uint64_t> batches = {1024, 16384, 65536};
  int reps = 5;
  bool cold = false;
  bool keep = false;
  double mean_kib = 50;
  uint64_t seed = 1;
};

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

double unit(uint64_t h) { return (static_cast<double>(h >> 11) + 0.5) / 9007199254740992.0; }

// Synthetic content: a content id gives a size, a whole-file hash and anchors.
struct Content {
  uint64_t size = 0, whole = 0;
  std::vector<uint64_t> anchors;
};

class Generator {
 public:
  Generator(uint64_t seed, double mean_bytes)
      : seed_(mix(seed)), mu_(std::log(mean_bytes) - kSigma * kSigma / 2) {}

  // File i's content: its own, or (5%) that of an earlier file.
  uint64_t content_of(uint64_t i) const {
    for (;;) {
      const uint64_t h = mix(seed_ ^ (i * 3 + 1));
      if (i == 0 || h % 100 >= kDuplicatePercent) return i;
      i = mix(h) % i;
    }
  }

  Content content(uint64_t id) const {
    Content c;
    const double u1 = unit(mix(seed_ ^ (id * 5 + 2))), u2 = unit(mix(seed_ ^ (id * 5 + 3)));
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);  // Box-Muller
    const double size = std::exp(mu_ + kSigma * z);
    c.size = static_cast<uint64_t>(std::clamp(size, 1.0, 64.0 * 1024 * 1024 * 1024));
    c.whole = mix(seed_ ^ (id * 5 + 4));
    const uint64_t base = mix(seed_ ^ (id * 5 + 5));
    if (c.size >= kMinRun) c.anchors.resize(c.size / kAnchorSpacing);
    for (size_t b = 0; b < c.anchors.size(); ++b) {
      const uint64_t h = mix(base + b);
      c.anchors[b] = h == 0 ? 1 : h;  // anchor hashes are never 0
    }
    return c;
  }

 private:
  uint64_t seed_;
  double mu_;
};

// File i's place in a tree: subvolumes of kFilesPerSubvolume files, a directory inode
// before each kFilesPerDirectory files.
FileKey key_of(uint64_t i, uint64_t* parent) {
  const uint64_t local = i % kFilesPerSubvolume;
  const uint64_t dir = kFirstInode + (local / kFilesPerDirectory) * (kFilesPerDirectory + 1);
  *parent = dir;
  return {kFirstSubvolume + i / kFilesPerSubvolume, dir + 1 + local % kFilesPerDirectory};
}

CatalogFile row_of(const Content& c, uint64_t i, uint64_t parent) {
  CatalogFile f;
  f.size = c.size;
  f.mtime_ns = static_cast<int64_t>(1700000000ULL * 1000000000ULL + mix(i) % (1ULL << 55));
  f.whole_hash = c.whole;
  f.parent = parent;
  return f;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

uint64_t file_bytes(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench-catalog: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T check(btrfs::Result<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().message());
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

std::unique_ptr<Catalog> open_catalog(const std::string& path) {
  return check(Catalog::open(path), "opening the catalog");
}

void drop_caches() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  if (!f.flush()) die("cannot write /proc/sys/vm/drop_caches (root needed for --cold)");
}

// Reads a file whole (into the page cache); returns the bytes read.
uint64_t read_whole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  while (f.read(buf.data(), static_cast<std::streamsize>(buf.size())) || f.gcount() > 0)
    total += static_cast<uint64_t>(f.gcount());
  return total;
}

// Bytes per table and index, from SQLite's dbstat (a read-only connection of its own).
std::vector<std::pair<std::string, uint64_t>> table_bytes(const std::string& path) {
  std::vector<std::pair<std::string, uint64_t>> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                           "ORDER BY sum(pgsize) DESC",
                           -1, &s, nullptr) == SQLITE_OK)
      while (sqlite3_step(s) == SQLITE_ROW)
        out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                         static_cast<uint64_t>(sqlite3_column_int64(s, 1)));
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

struct BatchFile {
  FileKey key;
  CatalogFile row;
  std::vector<uint64_t> anchors;
};

struct Timing {
  double match = 0, commit = 0;  // seconds
  uint64_t lookups = 0, found = 0, twins = 0;
};

// One repetition: B files, even ones with catalogued content, odd ones new.
std::vector<BatchFile> make_batch(const Generator& gen, uint64_t n, uint64_t b,
                                  std::mt19937_64& rng, uint64_t& next_new) {
  std::vector<BatchFile> out(b);
  const uint64_t subvolume = kFirstSubvolume + (n + kFilesPerSubvolume - 1) / kFilesPerSubvolume;
  for (uint64_t i = 0; i < b; ++i) {
    const uint64_t id = i % 2 == 0 ? gen.content_of(rng() % n) : next_new++;
    const Content c = gen.content(id);
    uint64_t parent = 0;
    FileKey k = key_of(i, &parent);
    k.subvolume = subvolume;  // a new tree: no row of the catalog is replaced
    out[i] = {k, row_of(c, kNewContent + i, parent), c.anchors};
  }
  return out;
}

Timing match_batch(Catalog& cat, const std::vector<BatchFile>& batch) {
  Timing t;
  const auto start = Clock::now();
  check(cat.begin(), "begin");
  std::set<std::pair<uint64_t, uint64_t>> candidates;
  auto consider = [&](const std::vector<FileKey>& keys) {
    ++t.lookups;
    t.found += keys.empty() ? 0 : 1;
    size_t taken = 0;
    for (const auto& k : keys) {
      if (taken == kTwinsPerHash) break;
      if (k.subvolume == batch.front().key.subvolume) continue;  // in the window itself
      candidates.emplace(k.subvolume, k.inode);
      ++taken;
    }
  };
  for (const auto& f : batch) {
    if (f.row.whole_hash) consider(cat.files_with_hash(*f.row.whole_hash));
    for (uint64_t h : f.anchors) consider(cat.files_with_anchor(h));
    check(cat.put_file(f.key, f.row, f.anchors), "put_file");
  }
  for (const auto& [subvolume, inode] : candidates)  // each twin's row, as read_each's check
    if (cat.file({subvolume, inode})) ++t.twins;
  t.match = seconds_since(start);
  const auto c = Clock::now();
  check(cat.commit(), "commit");
  t.commit = seconds_since(c);
  // Back to N rows, untimed.
  check(cat.begin(), "begin");
  for (const auto& f : batch) check(cat.remove_file(f.key), "remove_file");
  check(cat.commit(), "commit");
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench-catalog [--dir DIR] [--files N] [--txn-files N] [--batches B,B,...]\n"
               "                     [--reps N] [--mean-kib K] [--seed S] [--cold] [--keep]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--dir") o.dir = value();
    else if (a == "--files") o.files = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--txn-files") o.txn_files = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--reps") o.reps = std::atoi(value().c_str());
    else if (a == "--mean-kib") o.mean_kib = std::strtod(value().c_str(), nullptr);
    else if (a == "--seed") o.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--cold") o.cold = true;
    else if (a == "--keep") o.keep = true;
    else if (a == "--batches") {
      o.batches.clear();
      const std::string v = value();
      for (size_t p = 0; p < v.size();) {
        const size_t e = std::min(v.find(',', p), v.size());
        o.batches.push_back(std::strtoull(v.substr(p, e - p).c_str(), nullptr, 10));
        p = e + 1;
      }
    } else return usage();
  }
  if (o.files == 0 || o.txn_files == 0 || o.reps < 1 || o.mean_kib <= 0) return usage();
  if (o.cold && geteuid() != 0) die("--cold drops the page cache: run as root");

  const std::string path = o.dir + "/bench-catalog-" + std::to_string(getpid()) + ".db";
  const Generator gen(o.seed, o.mean_kib * 1024);
  std::printf("catalog %s: %llu files, transactions of %llu, mean size %.1f KiB (lognormal, "
              "sigma %.3f), %u%% duplicates, -b %llu KiB\n",
              path.c_str(), static_cast<unsigned long long>(o.files),
              static_cast<unsigned long long>(o.txn_files), o.mean_kib, kSigma,
              kDuplicatePercent, static_cast<unsigned long long>(kMinRun / 1024));

  // Fill.
  auto cat = open_catalog(path);
  check(cat->bind("bench-catalog"), "bind");
  const long rss_open = peak_rss_kib();
  uint64_t anchor_rows = 0, bytes = 0;
  double first_txn = 0, last_txn = 0;
  const auto fill_start = Clock::now();
  for (uint64_t from = 0; from < o.files; from += o.txn_files) {
    const auto t = Clock::now();
    const uint64_t to = std::min(o.files, from + o.txn_files);
    check(cat->begin(), "begin");
    for (uint64_t i = from; i < to; ++i) {
      const Content c = gen.content(gen.content_of(i));
      uint64_t parent = 0;
      const FileKey k = key_of(i, &parent);
      check(cat->put_file(k, row_of(c, i, parent), c.anchors), "put_file");
      anchor_rows += c.anchors.size();
      bytes += c.size;
    }
    check(cat->commit(), "commit");
    last_txn = seconds_since(t);
    if (from == 0) first_txn = last_txn;
    if (to % 1000000 == 0 || to == o.files)
      std::printf("  filled %llu files in %.1f s (last transaction of %llu: %.2f s), wal %llu bytes\n",
                  static_cast<unsigned long long>(to), seconds_since(fill_start),
                  static_cast<unsigned long long>(to - from), last_txn,
                  static_cast<unsigned long long>(file_bytes(path + "-wal")));
    std::fflush(stdout);
  }
  const double fill_s = seconds_since(fill_start);
  const long rss_fill = peak_rss_kib();
  const uint64_t wal_at_end = file_bytes(path + "-wal");
  cat.reset();  // the last connection's close checkpoints the WAL and removes it
  const uint64_t db_bytes = file_bytes(path), wal_bytes = file_bytes(path + "-wal");
  const auto tables = table_bytes(path);
  uint64_t file_table = 0, anchor_table = 0;
  for (const auto& [name, b] : tables) {
    if (name == "files" || name.rfind("files_by_", 0) == 0) file_table += b;
    if (name == "anchors" || name.rfind("anchors_by_", 0) == 0) anchor_table += b;
  }
  const double n = static_cast<double>(o.files);
  std::printf("fill: %.1f s (%.2f us per file; first transaction %.2f s, last %.2f s)\n", fill_s,
              fill_s / n * 1e6, first_txn, last_txn);
  std::printf("rows: %llu files, %llu anchor rows (%.3f per file), %.1f KiB per file on average\n",
              static_cast<unsigned long long>(o.files), static_cast<unsigned long long>(anchor_rows),
              static_cast<double>(anchor_rows) / n, static_cast<double>(bytes) / n / 1024);
  std::printf("hashfile: %llu bytes after checkpoint (-wal %llu; %llu before close), %.1f bytes "
              "per file\n",
              static_cast<unsigned long long>(db_bytes), static_cast<unsigned long long>(wal_bytes),
              static_cast<unsigned long long>(wal_at_end), static_cast<double>(db_bytes) / n);
  for (const auto& [name, b] : tables)
    std::printf("  %-16s %12llu bytes\n", name.c_str(), static_cast<unsigned long long>(b));
  const double per_file_row = static_cast<double>(file_table) / n;
  const double per_anchor_row =
      anchor_rows ? static_cast<double>(anchor_table) / static_cast<double>(anchor_rows) : 0;
  std::printf("  files + its indexes: %.1f bytes per file; anchors + its index: %.1f bytes per "
              "anchor row\n",
              per_file_row, per_anchor_row);

  cat = open_catalog(path);
  {
    const auto t = Clock::now();
    const auto c = cat->counts();
    std::printf("counts(): %llu files, %llu anchor rows, %llu duplicate files in %llu groups (%.1f s; "
                "peak RSS %ld KiB)\n",
                static_cast<unsigned long long>(c.files), static_cast<unsigned long long>(c.anchors),
                static_cast<unsigned long long>(c.duplicate_files),
                static_cast<unsigned long long>(c.duplicate_groups), seconds_since(t),
                peak_rss_kib());
  }

  // Batches: every warm pass first (a cold pass leaves the page cache empty), then cold.
  std::mt19937_64 rng(o.seed * 7919 + 17);
  uint64_t next_new = kNewContent;
  std::string json_batches;
  for (const bool cold : {false, true}) {
    if (cold && !o.cold) continue;
    if (!cold) {
      const auto t = Clock::now();
      const uint64_t read = read_whole(path);
      std::printf("warm: read the hashfile's %llu bytes into the page cache (%.1f s)\n",
                  static_cast<unsigned long long>(read), seconds_since(t));
    }
    for (const uint64_t b : o.batches) {
      std::vector<double> match, commit;
      Timing last;
      for (int r = 0; r < o.reps; ++r) {
        const auto batch = make_batch(gen, o.files, b, rng, next_new);
        if (cold) {
          cat.reset();
          drop_caches();
          cat = open_catalog(path);
        }
        last = match_batch(*cat, batch);
        match.push_back(last.match);
        commit.push_back(last.commit);
      }
      const double med = median(match), med_commit = median(commit);
      const double per_file_us = med / static_cast<double>(b) * 1e6;
      // The batch's own rows and twins are held by this tool (a window's scan holds them in
      // a run): the peak grows with B, not with N.
      const long rss = peak_rss_kib();
      std::printf("batch %6llu %s: match %.3f s median (min %.3f, max %.3f), %.1f us per file; "
                  "commit %.3f s; %llu lookups, %llu found, %llu twin rows read; peak RSS %ld "
                  "KiB\n",
                  static_cast<unsigned long long>(b), cold ? "cold" : "warm", med,
                  *std::min_element(match.begin(), match.end()),
                  *std::max_element(match.begin(), match.end()), per_file_us, med_commit,
                  static_cast<unsigned long long>(last.lookups),
                  static_cast<unsigned long long>(last.found),
                  static_cast<unsigned long long>(last.twins), rss);
      std::fflush(stdout);
      std::string runs;
      for (double m : match) runs += (runs.empty() ? "" : ",") + fixed(m, 4);
      json_batches += std::string(json_batches.empty() ? "" : ",") + "{\"files\":" +
                      std::to_string(b) + ",\"cache\":\"" + (cold ? "cold" : "warm") +
                      "\",\"match_s\":" + fixed(med, 4) + ",\"per_file_us\":" +
                      fixed(per_file_us, 2) + ",\"commit_s\":" + fixed(med_commit, 4) +
                      ",\"runs_s\":[" + runs + "],\"lookups\":" + std::to_string(last.lookups) +
                      ",\"found\":" + std::to_string(last.found) +
                      ",\"peak_rss_kib\":" + std::to_string(rss) + "}";
    }
  }
  cat.reset();
  const long rss_end = peak_rss_kib();
  std::printf("peak RSS: %ld KiB after open, %ld KiB after the fill, %ld KiB at the end\n",
              rss_open, rss_fill, rss_end);
  if (!o.keep) {
    ::unlink(path.c_str());
    ::unlink((path + "-wal").c_str());
    ::unlink((path + "-shm").c_str());
  } else {
    std::printf("kept %s\n", path.c_str());
  }
  std::printf("{\"bench\":\"catalog\",\"files\":%llu,\"txn_files\":%llu,\"mean_kib\":%.1f,"
              "\"anchor_rows\":%llu,\"hashfile_bytes\":%llu,\"bytes_per_file\":%.1f,"
              "\"file_row_bytes\":%.1f,\"anchor_row_bytes\":%.1f,\"fill_s\":%.1f,"
              "\"batches\":[%s],\"peak_rss_kib\":%ld}\n",
              static_cast<unsigned long long>(o.files),
              static_cast<unsigned long long>(o.txn_files), o.mean_kib,
              static_cast<unsigned long long>(anchor_rows),
              static_cast<unsigned long long>(db_bytes), static_cast<double>(db_bytes) / n,
              per_file_row, per_anchor_row, fill_s, json_batches.c_str(), rss_end);
  return 0;
}
