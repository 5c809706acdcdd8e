// The catalog's rows and lookups, on an in-memory catalog (Catalog::open_in_memory): the
// same SQL a run uses, without a disk.
#include <gtest/gtest.h>

#include <algorithm>

#include "src/catalog/catalog.h"

namespace btrdedupe {
namespace {

class CatalogMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Catalog::open_in_memory();
    ASSERT_TRUE(c.ok()) << c.error().message();
    catalog_ = std::move(*c);
    ASSERT_TRUE(catalog_->begin().ok());
  }
  static CatalogFile row(uint64_t size, std::optional<uint64_t> hash) {
    CatalogFile f;
    f.size = size;
    f.mtime_ns = 1;
    f.whole_hash = hash;
    f.parent = 256;
    return f;
  }
  static bool has(const std::vector<FileKey>& keys, FileKey k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  }
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogMemory, AnchorsFindTheFilesThatHoldThem) {
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(1 << 20, 11), {100, 200}).ok());
  ASSERT_TRUE(catalog_->put_file({5, 258}, row(1 << 20, 12), {200, 300}).ok());
  ASSERT_TRUE(catalog_->put_file({6, 257}, row(4096, std::nullopt), {}).ok());
  EXPECT_EQ(catalog_->files_with_anchor(100), (std::vector<FileKey>{{5, 257}}));
  const auto both = catalog_->files_with_anchor(200);
  EXPECT_EQ(both.size(), 2u);
  EXPECT_TRUE(has(both, {5, 257}) && has(both, {5, 258}));
  EXPECT_TRUE(catalog_->files_with_anchor(999).empty());
  EXPECT_EQ(catalog_->files_with_hash(12), (std::vector<FileKey>{{5, 258}}));
  const auto n = catalog_->counts();
  EXPECT_EQ(n.files, 3u);
  EXPECT_EQ(n.files_with_hash, 2u);
  EXPECT_EQ(n.anchors, 4u);
}

TEST_F(CatalogMemory, AProvenDataHashStaysWithItsRowUntilTheRowIsWrittenAgain) {
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(3000, 11), {}).ok());
  EXPECT_FALSE(catalog_->file({5, 257})->short_hash);
  ASSERT_TRUE(catalog_->set_short_hash({5, 257}, 0xfeedface12345678ULL).ok());
  EXPECT_EQ(catalog_->file({5, 257})->short_hash, 0xfeedface12345678ULL);
  ASSERT_TRUE(catalog_->set_short_hash({5, 999}, 1).ok());  // no row: nothing to update
  EXPECT_FALSE(catalog_->file({5, 999}));
  CatalogFile with_hash = row(3000, 12);
  with_hash.short_hash = 99;
  ASSERT_TRUE(catalog_->add_file({6, 257}, with_hash, {}).ok());
  EXPECT_EQ(catalog_->file({6, 257})->short_hash, 99u);
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(3001, 13), {}).ok());  // the file changed
  EXPECT_FALSE(catalog_->file({5, 257})->short_hash);
}

TEST_F(CatalogMemory, ARowWrittenAgainReplacesItsAnchorsAndRemovalTakesThem) {
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(1 << 20, 11), {100, 200}).ok());
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(2 << 20, 13), {300}).ok());  // rewritten
  EXPECT_TRUE(catalog_->files_with_anchor(100).empty());
  EXPECT_EQ(catalog_->files_with_anchor(300), (std::vector<FileKey>{{5, 257}}));
  EXPECT_TRUE(catalog_->files_with_hash(11).empty());
  EXPECT_EQ(catalog_->file({5, 257})->size, 2u << 20);
  ASSERT_TRUE(catalog_->remove_file({5, 257}).ok());
  EXPECT_FALSE(catalog_->file({5, 257}));
  EXPECT_EQ(catalog_->counts().anchors, 0u);
}

TEST_F(CatalogMemory, ASubvolumeGoesWithAllItsRowsAndAnotherScopeEmptiesTheCatalog) {
  ASSERT_TRUE(catalog_->set_scope({{"/a"}, "recursive=1", true}).ok());
  ASSERT_TRUE(catalog_->put_file({5, 257}, row(1 << 20, 11), {100}).ok());
  ASSERT_TRUE(catalog_->put_file({6, 257}, row(1 << 20, 11), {100}).ok());
  ASSERT_TRUE(catalog_->put_file({5, 258}, row(1 << 20, 12), {}).ok());
  ASSERT_TRUE(catalog_->remove_subvolume_files(6).ok());
  EXPECT_EQ(catalog_->files_with_anchor(100), (std::vector<FileKey>{{5, 257}}));
  ASSERT_TRUE(catalog_->set_scope({{"/a"}, "recursive=1", false}).ok());  // same scope
  EXPECT_EQ(catalog_->counts().files, 2u);
  ASSERT_TRUE(catalog_->set_scope({{"/b"}, "recursive=1", false}).ok());  // another
  EXPECT_EQ(catalog_->counts().files, 0u);
  EXPECT_EQ(catalog_->counts().anchors, 0u);
  ASSERT_TRUE(catalog_->commit().ok());
  EXPECT_FALSE(catalog_->upgraded_from());
}

}  // namespace
}  // namespace btrdedupe
