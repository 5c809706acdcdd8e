// The whole-file duplicates found by scan + fingerprint + match, against a reference that
// knows nothing of btrfs checksums: sha256 of every file's bytes. A varied tree (sizes
// around the inline limit and the sector size, empty files, unaligned tails, multi-extent
// files, in-copy duplicates, near-duplicates, a sparse file, a hardlink) is written once
// and copied unshared into a compressed and an uncompressed directory.
//
// Files that can never be whole-file candidates are left out of the reference explicitly,
// each for its reason, and the test says how many: empty files (nothing to share) and files
// held inline in metadata (no extent to share). Holes are content: files with holes or
// prealloc ranges (which read as zeros, and count as holes) are equal when their bytes and
// where their data lies (FIEMAP) are.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "btrfs/fd.h"
#include "btrfs/fiemap.h"
#include "src/read/scanned_file.h"
#include "support/btrfs_image.h"
#include "support/planned_dedupe.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

// One file as the reference sees it: the inode (hardlinks are one file) and its path.
using Inode = std::pair<uint64_t, uint64_t>;  // st_dev, st_ino
using Pair = std::pair<std::string, std::string>;  // two paths, ordered

// Written into plain/ then copied into zstd/ (compression property set before the copy).
const char* kBuildTree = R"SH(
set -e
mkdir plain zstd
btrfs property set zstd compression zstd
cd plain
mkdir small text bin multi dup sparse
rnd() { head -c "$2" /dev/urandom > "$1"; }
hex() { head -c $(( ($2 + 1) / 2 )) /dev/urandom | basenc --base16 -w0 | head -c "$2" > "$1"; }
# Sets the byte at offset $2 of file $1 to a value it does not have now.
flip() {
  b=$(dd if="$1" bs=1 skip="$2" count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
  printf "\\$(printf %o $(( (b + 1) % 256 )))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
: > small/empty-1
: > small/empty-2
for n in 1 100 2047 2048 2049 3000 4095 4096 4097 8191 8192 8193; do
  rnd small/r-$n $n
  hex text/h-$n $n
done
cp --reflink=never small/r-100 small/r-100-again
cp --reflink=never small/r-4097 small/r-4097-again
cp --reflink=never text/h-3000 text/h-3000-again
hex text/h-130k $((130 * 1024 + 5))
hex text/h-1m $((1024 * 1024 + 7))
hex text/h-4m $((4 * 1024 * 1024))
rnd bin/r-64k 65536
rnd bin/r-1m $((1024 * 1024 + 1))
rnd bin/x $((128 * 1024 + 100))
cp --reflink=never bin/x bin/x-last-byte
flip bin/x-last-byte $((128 * 1024 + 99))
cp --reflink=never bin/x bin/x-middle-byte
flip bin/x-middle-byte 70000
cp --reflink=never bin/x bin/x-plus-zero
head -c 1 /dev/zero >> bin/x-plus-zero
head -c $((128 * 1024)) bin/x > bin/x-prefix
# Three extents written out of order, each flushed before the next.
for seek in 2 0 1; do
  head -c 1048576 /dev/urandom | dd of=multi/m-random bs=1M seek=$seek conv=notrunc 2>/dev/null
  sync -f .
done
for seek in 1 0; do
  head -c 600000 /dev/urandom | basenc --base16 -w0 | head -c 1048576 |
    dd of=multi/m-text bs=1M seek=$seek conv=notrunc 2>/dev/null
  sync -f .
done
cp --reflink=never bin/r-1m dup/r-1m-a
cp --reflink=never bin/r-1m dup/r-1m-b
cp --reflink=never text/h-130k dup/h-130k
cp --reflink=never multi/m-random dup/m-random
ln bin/r-64k dup/r-64k-hardlink
truncate -s 1M sparse/s
head -c 4096 /dev/urandom | dd of=sparse/s bs=4096 seek=100 conv=notrunc 2>/dev/null
cd ..
sync -f .
cp -a --reflink=never plain/. zstd/
sync -f .
)SH";

// Why a file can never be a whole-file candidate, or "" when it can be; then *data_map
// spells where its data lies (written extents, merged; holes and prealloc are the rest).
std::string not_a_candidate(const std::string& path, uint64_t size, std::string* data_map) {
  if (size == 0) return "empty";
  auto fd = btrfs::Fd::open(path, O_RDONLY);
  if (!fd) return "unreadable: " + fd.error().message();
  auto extents = btrfs::fiemap(fd->get());
  if (!extents) return "no extent map: " + extents.error().message();
  std::vector<std::pair<uint64_t, uint64_t>> data;  // [from, to)
  for (const auto& e : *extents) {
    if (e.inline_data()) return "inline";
    if (e.unwritten()) continue;
    const uint64_t to = std::min(size, e.logical + e.length);
    if (!data.empty() && data.back().second == e.logical)
      data.back().second = to;
    else
      data.emplace_back(e.logical, to);
  }
  for (const auto& [from, to] : data) *data_map += std::to_string(from) + "-" + std::to_string(to) + ",";
  return "";
}

std::string sha256_of(const std::string& path) {
  const std::string data = read_file(path);
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

Inode inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return {st.st_dev, st.st_ino};
}

Pair ordered(std::string a, std::string b) {
  return a < b ? Pair{std::move(a), std::move(b)} : Pair{std::move(b), std::move(a)};
}

std::string describe(const std::set<Pair>& pairs) {
  std::string s;
  for (const auto& [a, b] : pairs) s += "  " + a + " = " + b + "\n";
  return s;
}

class DuplicateSetTest : public BtrfsTest {};

TEST_F(DuplicateSetTest, WholeFileGroupsEqualTheSha256ReferenceAcrossCompressedAndPlainCopies) {
  sh("cd " + shell_quote(path("")) + " && mkdir t && cd t && " + kBuildTree);
  const std::string root = path("t");

  // The reference: every regular file once per inode (its first name in sorted order, so
  // the name does not decide anything), grouped by sha256.
  std::map<Inode, std::string> name_of;
  std::map<std::string, uint64_t> size_of;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_symlink() && !entry.is_regular_file()) continue;
    const std::string p = entry.path().string();
    auto [it, fresh] = name_of.emplace(inode_of(p), p);
    if (!fresh && p < it->second) it->second = p;
  }
  std::map<std::string, std::vector<std::string>> excluded;  // reason -> paths
  std::map<std::string, std::vector<std::string>> by_content;
  for (const auto& [inode, p] : name_of) {
    const uint64_t size = std::filesystem::file_size(p);
    std::string data_map;
    const std::string why = not_a_candidate(p, size, &data_map);
    if (!why.empty()) {
      excluded[why].push_back(p);
      continue;
    }
    by_content[sha256_of(p) + std::to_string(size) + " " + data_map].push_back(p);
  }
  std::set<Pair> expected;
  for (const auto& [content, paths] : by_content)
    for (size_t i = 0; i < paths.size(); ++i)
      for (size_t j = i + 1; j < paths.size(); ++j) expected.insert(ordered(paths[i], paths[j]));

  // What the engine proposes: every pair inside a whole-file group, named like the reference.
  const PlannedDedupe p = plan_dedupe(root);
  std::set<Pair> found;
  for (const auto& g : p.matches.groups) {
    if (!g.whole_file) continue;
    for (size_t i = 0; i < g.members.size(); ++i)
      for (size_t j = i + 1; j < g.members.size(); ++j) {
        const auto& a = p.scan.files[g.members[i].file];
        const auto& b = p.scan.files[g.members[j].file];
        found.insert(ordered(name_of[inode_of(file_path(p.scan, a))],
                             name_of[inode_of(file_path(p.scan, b))]));
      }
  }

  std::set<Pair> missed, extra;
  std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(),
                      std::inserter(missed, missed.end()));
  std::set_difference(found.begin(), found.end(), expected.begin(), expected.end(),
                      std::inserter(extra, extra.end()));
  EXPECT_TRUE(missed.empty()) << "equal by sha256, not grouped:\n" << describe(missed);
  EXPECT_TRUE(extra.empty()) << "grouped, not equal by sha256:\n" << describe(extra);

  // The comparison covers what it claims to. Every exclusion is accounted for by reason:
  // the 2 x 2 empty files; the inline ones (the small files of plain/ up to 2048 bytes, and
  // whatever zstd/ compressed into metadata).
  std::string summary = std::to_string(name_of.size()) + " files, " +
                        std::to_string(expected.size()) + " pairs equal by sha256; left out:";
  for (const auto& [why, paths] : excluded)
    summary += " " + why + " " + std::to_string(paths.size());
  std::cout << summary << "\n";
  for (const auto& [why, paths] : excluded)
    EXPECT_TRUE(why == "empty" || why == "inline") << why << ": " << paths[0];
  EXPECT_EQ(excluded["empty"].size(), 4u);
  // The sparse file and its copy (holes kept by cp) are equal, holes and all.
  EXPECT_TRUE(expected.count(ordered(root + "/plain/sparse/s", root + "/zstd/sparse/s")));
  for (const auto& q : excluded["inline"])
    EXPECT_LE(std::filesystem::file_size(q), uint64_t{p.scan.fs.sectorsize}) << q;
  for (const std::string n : {"1", "100", "2047", "2048"}) {
    const std::string small = root + "/plain/small/r-" + n;
    EXPECT_NE(std::find(excluded["inline"].begin(), excluded["inline"].end(), small),
              excluded["inline"].end())
        << small << " should be inline";
  }
  // The reference is not vacuous: it holds what the tree was built to hold. Each candidate
  // of plain/ pairs with its zstd/ copy unless that copy went inline...
  auto is_candidate = [&](const std::string& q) {
    for (const auto& [content, paths] : by_content)
      if (std::find(paths.begin(), paths.end(), q) != paths.end()) return true;
    return false;
  };
  size_t cross = 0;
  for (const auto& [inode, q] : name_of) {
    const auto at = q.find("/t/plain/");
    if (at == std::string::npos || !is_candidate(q)) continue;
    const std::string twin = root + "/zstd/" + q.substr(at + 9);
    if (!is_candidate(twin)) continue;
    EXPECT_TRUE(expected.count(ordered(q, twin))) << q;
    ++cross;
  }
  EXPECT_GT(cross, 0u);
  // ...the copies made inside each tree pair there, and the near-duplicates (one byte
  // changed, one zero byte appended, a prefix) are neither equal nor grouped.
  for (const std::string copy : {"/plain/", "/zstd/"}) {
    const std::string c = root + copy;
    for (const auto& [a, b] : std::vector<Pair>{{"bin/r-1m", "dup/r-1m-a"},
                                                {"dup/r-1m-a", "dup/r-1m-b"},
                                                {"text/h-130k", "dup/h-130k"},
                                                {"multi/m-random", "dup/m-random"},
                                                {"small/r-4097", "small/r-4097-again"}})
      EXPECT_TRUE(expected.count(ordered(c + a, c + b))) << c + a << " " << c + b;
    for (const std::string near : {"bin/x-last-byte", "bin/x-middle-byte", "bin/x-plus-zero",
                                   "bin/x-prefix"}) {
      EXPECT_FALSE(found.count(ordered(c + "bin/x", c + near))) << c + near;
      EXPECT_FALSE(expected.count(ordered(c + "bin/x", c + near))) << c + near;
    }
  }
}

}  // namespace
}  // namespace btrdedupe::test
