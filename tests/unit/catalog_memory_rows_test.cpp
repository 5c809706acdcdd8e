// A one-run catalog's rows held in memory (src/catalog/catalog_memory_rows.h): on their own, and
// behind Catalog, where they must answer as the SQLite tables do, before and after they
// are written there.
#include <gtest/gtest.h>

#include <random>

#include "src/catalog/catalog.h"
#include "src/catalog/catalog_memory_rows.h"

namespace btrdedupe {
namespace {

CatalogFile row(uint64_t size, std::optional<uint64_t> hash) {
  CatalogFile f;
  f.size = size;
  f.mtime_ns = static_cast<int64_t>(size) * 3;
  f.flags = size % 5;
  f.whole_hash = hash;
  f.parent = 256 + size % 7;
  return f;
}

bool same(const std::optional<CatalogFile>& a, const CatalogFile* b) {
  if (!a || !b) return !a && !b;
  return a->size == b->size && a->mtime_ns == b->mtime_ns && a->flags == b->flags &&
         a->whole_hash == b->whole_hash && a->parent == b->parent &&
         a->short_hash == b->short_hash;
}

TEST(CatalogMemoryRows, KeysComeInKeyOrderWhateverTheOrderAdded) {
  CatalogMemoryRows rows;
  rows.add({7, 300}, row(10, 42), {});
  rows.add({5, 900}, row(10, 42), {1});
  rows.add({5, 257}, row(10, 42), {1});
  rows.add({6, 1}, row(10, 43), {});
  EXPECT_EQ(rows.with_hash(42), (std::vector<FileKey>{{5, 257}, {5, 900}, {7, 300}}));
  EXPECT_EQ(rows.with_hash(43), (std::vector<FileKey>{{6, 1}}));
  EXPECT_EQ(rows.with_anchor(1), (std::vector<FileKey>{{5, 257}, {5, 900}}));
  EXPECT_TRUE(rows.with_hash(44).empty());
  EXPECT_TRUE(rows.with_anchor(2).empty());
  EXPECT_EQ(rows.rows(), 4u);
}

// As in SQLite (Catalog::add_file): the file row is replaced, its anchors stay.
TEST(CatalogMemoryRows, ALaterAddReplacesTheRowAndAddsToItsAnchors) {
  CatalogMemoryRows rows;
  rows.add({5, 257}, row(10, 42), {1, 2});
  rows.add({5, 257}, row(20, 43), {3});
  ASSERT_NE(rows.find({5, 257}), nullptr);
  EXPECT_EQ(rows.find({5, 257})->size, 20u);
  EXPECT_TRUE(rows.with_hash(42).empty());
  EXPECT_EQ(rows.with_hash(43), (std::vector<FileKey>{{5, 257}}));
  EXPECT_EQ(rows.with_anchor(1), (std::vector<FileKey>{{5, 257}}));
  EXPECT_EQ(rows.with_anchor(3), (std::vector<FileKey>{{5, 257}}));
  EXPECT_EQ(rows.rows(), 1u);
  size_t seen = 0;
  rows.for_each([&](const FileKey&, const CatalogFile& f, const std::vector<uint64_t>& a) {
    ++seen;
    EXPECT_EQ(f.size, 20u);
    EXPECT_EQ(a, (std::vector<uint64_t>{1, 2, 3}));
  });
  EXPECT_EQ(seen, 1u);
}

TEST(CatalogMemoryRows, ARemovedRowIsGoneFromEveryLookupAndMayComeBack) {
  CatalogMemoryRows rows;
  rows.add({5, 257}, row(10, 42), {1});
  EXPECT_TRUE(rows.remove({5, 257}));
  EXPECT_FALSE(rows.remove({5, 257}));
  EXPECT_EQ(rows.find({5, 257}), nullptr);
  EXPECT_TRUE(rows.with_hash(42).empty());
  EXPECT_TRUE(rows.with_anchor(1).empty());
  EXPECT_FALSE(rows.set_short_hash({5, 257}, 9));
  EXPECT_TRUE(rows.empty());
  rows.add({5, 257}, row(10, 42), {1});
  EXPECT_EQ(rows.with_hash(42), (std::vector<FileKey>{{5, 257}}));
  EXPECT_TRUE(rows.set_short_hash({5, 257}, 9));
  EXPECT_EQ(rows.find({5, 257})->short_hash, 9u);
}

TEST(CatalogMemoryRows, HoldsManyRowsInAboutAHundredAndFiftyBytesEach) {
  CatalogMemoryRows rows;
  constexpr uint64_t kFiles = 100000;
  for (uint64_t i = 0; i < kFiles; ++i) rows.add({256 + i % 3, 257 + i}, row(i, i / 2), {});
  EXPECT_EQ(rows.rows(), kFiles);
  EXPECT_LT(rows.bytes(), 150 * kFiles);
  for (uint64_t i = 0; i < kFiles; i += 997) {
    ASSERT_NE(rows.find({256 + i % 3, 257 + i}), nullptr);
    EXPECT_EQ(rows.find({256 + i % 3, 257 + i})->size, i);
    EXPECT_EQ(rows.with_hash(i / 2).size(), 2u);
  }
  rows.clear();
  EXPECT_EQ(rows.bytes(), 0u);
  EXPECT_EQ(rows.find({256, 257}), nullptr);
}

// A catalog for one run, with a bound small enough that its rows go to SQLite several
// times, against a catalog that writes every row at once: the same calls, the same answers.
TEST(OneRunCatalog, AnswersAsTheTablesDoBeforeAndAfterItsRowsAreWritten) {
  constexpr size_t kBound = 64 << 10;
  auto plain = Catalog::open_in_memory();
  auto one_run = Catalog::open_in_memory();
  ASSERT_TRUE(plain.ok() && one_run.ok());
  ASSERT_TRUE((*one_run)->use_for_one_run(kBound).ok());
  Catalog* both[] = {plain->get(), one_run->get()};
  for (Catalog* c : both) ASSERT_TRUE(c->begin().ok());
  size_t writes = 0, held_before = 0;
  std::mt19937_64 random(17);
  const auto key = [&] { return FileKey{256 + random() % 2, 257 + random() % 3000}; };
  for (int step = 0; step < 20000; ++step) {
    const FileKey k = key();
    const uint64_t what = random() % 10;
    if (what < 6) {
      const CatalogFile f = row(random() % 5000, random() % 4 ? std::optional<uint64_t>(random() % 400) : std::nullopt);
      std::vector<uint64_t> anchors;
      for (uint64_t a = random() % 3; a > 0; --a) anchors.push_back(1000 + random() % 200);
      std::sort(anchors.begin(), anchors.end());
      anchors.erase(std::unique(anchors.begin(), anchors.end()), anchors.end());
      // A window's add_file (the row may be written already) or a record's put_file.
      for (Catalog* c : both)
        ASSERT_TRUE((what < 3 ? c->add_file(k, f, anchors) : c->put_file(k, f, anchors)).ok());
      const size_t held = one_run->get()->held_row_bytes();
      ASSERT_LE(held, kBound);
      writes += held < held_before;
      held_before = held;
    } else if (what < 7) {
      for (Catalog* c : both) ASSERT_TRUE(c->remove_file(k).ok());
    } else if (what < 8) {
      for (Catalog* c : both) ASSERT_TRUE(c->set_short_hash(k, step).ok());
    } else {
      const uint64_t h = random() % 400, a = 1000 + random() % 200;
      ASSERT_EQ(plain->get()->files_with_hash(h), one_run->get()->files_with_hash(h)) << step;
      ASSERT_EQ(plain->get()->files_with_anchor(a), one_run->get()->files_with_anchor(a)) << step;
      const auto held = one_run->get()->file(k);
      ASSERT_TRUE(same(plain->get()->file(k), held ? &*held : nullptr)) << step;
    }
  }
  EXPECT_GE(writes, 10u);  // the rows went to SQLite, and were held again, many times
  const auto a = plain->get()->counts(), b = one_run->get()->counts();
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.files_with_hash, b.files_with_hash);
  EXPECT_EQ(a.anchors, b.anchors);
  EXPECT_EQ(a.duplicate_groups, b.duplicate_groups);
  EXPECT_EQ(plain->get()->files().size(), one_run->get()->files().size());
  for (Catalog* c : both) EXPECT_TRUE(c->commit().ok());
}

}  // namespace
}  // namespace btrdedupe
