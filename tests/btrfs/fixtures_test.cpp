// The fixture layouts (fixtures/build-layout, described in fixtures/README.md) are what they
// claim: each layout is built on a fresh loop-mounted btrfs and checked with the standard tools
// (filefrag, lsattr, btrfs subvolume show, btrfs property get, stat, cmp, sha256sum, find).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// One line of `filefrag -v -b1` (offsets and lengths in bytes).
struct Extent {
  uint64_t logical = 0;
  uint64_t physical = 0;
  uint64_t length = 0;
  std::set<std::string> flags;
  bool has(const std::string& flag) const { return flags.count(flag) != 0; }
};

std::string describe(const std::vector<Extent>& extents) {
  std::ostringstream out;
  for (const auto& e : extents) {
    out << "  logical " << e.logical << " physical " << e.physical << " length " << e.length << " [";
    for (const auto& f : e.flags) out << f << ' ';
    out << "]\n";
  }
  return out.str();
}

std::set<std::string> split_flags(const std::string& text) {
  std::set<std::string> flags;
  std::istringstream in(text);
  std::string flag;
  while (std::getline(in, flag, ',')) {
    flag.erase(0, flag.find_first_not_of(" \t"));
    flag.erase(flag.find_last_not_of(" \t") + 1);
    if (!flag.empty()) flags.insert(flag);
  }
  return flags;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\n"));
  s.erase(s.find_last_not_of(" \t\n") + 1);
  return s;
}

struct FileStat {
  uint64_t ino = 0, nlink = 0, size = 0, blocks = 0;
};

FileStat stat_of(const std::string& file) {
  struct stat st {};
  EXPECT_EQ(::lstat(file.c_str(), &st), 0) << "stat " << file;
  return {st.st_ino, st.st_nlink, static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_blocks)};
}

bool all_zero(const std::string& data, uint64_t offset, uint64_t length) {
  if (offset + length > data.size()) return false;
  return std::all_of(data.begin() + static_cast<std::ptrdiff_t>(offset),
                     data.begin() + static_cast<std::ptrdiff_t>(offset + length),
                     [](char c) { return c == 0; });
}

// The data ranges of a file, [start, end) each, as SEEK_DATA and SEEK_HOLE find them (btrfs
// reports preallocated ranges as holes).
std::vector<std::pair<uint64_t, uint64_t>> data_ranges(const std::string& file) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << "open " << file;
  if (fd < 0) return ranges;
  struct stat st {};
  ::fstat(fd, &st);
  for (off_t at = 0; at < st.st_size;) {
    const off_t start = ::lseek(fd, at, SEEK_DATA);
    if (start < 0) break;  // ENXIO: no data past `at`
    const off_t end = ::lseek(fd, start, SEEK_HOLE);
    ranges.emplace_back(start, end);
    at = end;
  }
  ::close(fd);
  return ranges;
}

class FixtureLayout : public BtrfsTest {
 protected:
  std::string q(const std::string& relative) { return shell_quote(path(relative)); }

  std::vector<Extent> extents(const std::string& relative) {
    static const std::regex line(
        R"(^\s*\d+:\s*(\d+)\.\.\s*\d+:\s*(\d+)\.\.\s*\d+:\s*(\d+):\s*(?:\d+:)?(.*)$)");
    const std::string output = sh("filefrag -v -b1 " + q(relative));
    std::vector<Extent> result;
    std::istringstream in(output);
    std::string text;
    std::smatch m;
    while (std::getline(in, text)) {
      if (!std::regex_match(text, m, line)) continue;
      result.push_back({std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), split_flags(m[4])});
    }
    return result;
  }

  bool any_extent(const std::string& relative, const std::string& flag) {
    const auto list = extents(relative);
    return std::any_of(list.begin(), list.end(), [&](const Extent& e) { return e.has(flag); });
  }

  // Regular files under a directory, relative to it, sorted (find -print0: any name survives).
  std::vector<std::string> files_under(const std::string& relative) {
    auto names = split(sh("cd " + q(relative) + " && find . -type f -print0"), '\0');
    for (auto& name : names) name.erase(0, 2);  // "./"
    std::sort(names.begin(), names.end());
    return names;
  }

  bool same_content(const std::string& a, const std::string& b) {
    return run_command("cmp -- " + q(a) + " " + q(b)).exit_code == 0;
  }

  // `btrfs subvolume show` as key -> value ("UUID", "Parent UUID", "Flags", ...).
  std::map<std::string, std::string> subvolume_show(const std::string& relative) {
    std::map<std::string, std::string> fields;
    for (const auto& text : split(sh("btrfs subvolume show " + q(relative)), '\n')) {
      const auto colon = text.find(':');
      if (colon == std::string::npos) continue;
      fields.emplace(trim(text.substr(0, colon)), trim(text.substr(colon + 1)));
    }
    return fields;
  }

  std::string lsattr_flags(const std::string& relative) {
    const std::string output = sh("lsattr -d -- " + q(relative));
    return output.substr(0, output.find(' '));
  }
};

TEST_F(FixtureLayout, ListNamesEveryLayout) {
  const std::string list = sh(std::string("bash ") + BTRDEDUPE_FIXTURES_DIR + "/build-layout --list");
  for (const char* name : {"two-copies", "reflinked", "snapshots", "compressed", "nodatacow", "inline",
                           "prealloc", "sparse", "hardlinks", "odd-names", "layout-differs", "backup-pool",
                           "ext4-images", "all"}) {
    EXPECT_NE(list.find(std::string(name) + " "), std::string::npos) << name << " missing:\n" << list;
  }
}

TEST_F(FixtureLayout, RefusesUnknownLayoutNonEmptyDirAndOtherFilesystems) {
  const std::string tool = std::string("bash ") + BTRDEDUPE_FIXTURES_DIR + "/build-layout ";
  const auto unknown = run_command(tool + "no-such-layout " + q("x"));
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("unknown layout"), std::string::npos) << unknown.output;

  sh("mkdir " + q("busy") + " && echo keep > " + q("busy/precious"));
  const auto busy = run_command(tool + "inline " + q("busy"));
  EXPECT_NE(busy.exit_code, 0);
  EXPECT_NE(busy.output.find("not empty"), std::string::npos) << busy.output;
  EXPECT_EQ(read_file(path("busy/precious")), "keep\n");

  // /proc is never btrfs; nothing may be created there.
  const auto elsewhere = run_command(tool + "inline /proc/btrdedupe-fixture-test");
  EXPECT_NE(elsewhere.exit_code, 0);
  EXPECT_NE(elsewhere.output.find("not btrfs"), std::string::npos) << elsewhere.output;
}

TEST_F(FixtureLayout, TwoCopies) {
  build_layout("two-copies", "tc");
  const auto a = files_under("tc/a");
  const auto b = files_under("tc/b");
  EXPECT_EQ(a.size(), 60u);
  ASSERT_EQ(a, b) << "b must hold exactly a's file names";

  uint64_t bytes = 0;
  std::set<std::string> contents;
  for (const auto& name : a) {
    EXPECT_TRUE(same_content("tc/a/" + name, "tc/b/" + name)) << name;
    bytes += stat_of(path("tc/a/" + name)).size;
    contents.insert(trim(sh("sha256sum < " + q("tc/a/" + name))));
    for (const char* side : {"tc/a/", "tc/b/"}) {
      for (const auto& e : extents(side + name))
        EXPECT_FALSE(e.has("shared")) << side << name << " has a shared extent";
    }
  }
  EXPECT_EQ(bytes, 18161716u);
  EXPECT_EQ(contents.size(), 54u) << "60 files, 6 of them in-tree duplicates";
  EXPECT_TRUE(std::filesystem::is_directory(path("tc/b/misc/empty-dir")));

  // The sizes the tree was designed with.
  EXPECT_EQ(stat_of(path("tc/b/misc/empty")).size, 0u);
  EXPECT_EQ(stat_of(path("tc/b/docs/tiny-01.txt")).size, 100u);
  EXPECT_EQ(stat_of(path("tc/b/src/src-01.c")).size, 3 * kKiB);
  EXPECT_EQ(stat_of(path("tc/b/src/lib/lib-01.o")).size, 64 * kKiB);
  EXPECT_EQ(stat_of(path("tc/b/docs/deep/er/est/page-01.html")).size, 130 * kKiB);
  EXPECT_EQ(stat_of(path("tc/b/media/clip-1.bin")).size, kMiB);
  EXPECT_EQ(stat_of(path("tc/b/media/raw/big-1.img")).size, 5 * kMiB);
  EXPECT_EQ(stat_of(path("tc/b/media/raw/big-2.img")).size, 5 * kMiB + 1000);
  EXPECT_TRUE(any_extent("tc/b/docs/tiny-01.txt", "inline"));
  EXPECT_FALSE(any_extent("tc/b/src/src-01.c", "inline"));
  // In-tree duplicates: equal bytes, separate extents.
  EXPECT_TRUE(same_content("tc/a/src/lib/lib-01.o", "tc/a/misc/dup-lib-b.o"));
  EXPECT_TRUE(same_content("tc/a/src/lib/lib-01.o", "tc/a/src/lib/util/dup-lib-a.o"));
  EXPECT_TRUE(same_content("tc/a/media/clip-1.bin", "tc/a/media/raw/dup-clip.bin"));
  EXPECT_FALSE(same_content("tc/a/media/clip-1.bin", "tc/a/media/clip-2.bin"));
}

TEST_F(FixtureLayout, Reflinked) {
  build_layout("reflinked", "rl");
  const auto files = files_under("rl/orig");
  EXPECT_EQ(files.size(), 5u);
  ASSERT_EQ(files, files_under("rl/copy"));
  for (const auto& name : files) {
    EXPECT_TRUE(same_content("rl/orig/" + name, "rl/copy/" + name)) << name;
    const auto orig = extents("rl/orig/" + name);
    const auto copy = extents("rl/copy/" + name);
    ASSERT_FALSE(orig.empty()) << name;
    ASSERT_EQ(orig.size(), copy.size()) << name << "\norig:\n" << describe(orig) << "copy:\n" << describe(copy);
    for (size_t i = 0; i < orig.size(); ++i) {
      EXPECT_EQ(orig[i].logical, copy[i].logical) << name;
      EXPECT_EQ(orig[i].physical, copy[i].physical) << name;
      EXPECT_EQ(orig[i].length, copy[i].length) << name;
      EXPECT_TRUE(orig[i].has("shared") && copy[i].has("shared")) << name << "\n" << describe(copy);
    }
  }
  EXPECT_EQ(stat_of(path("rl/copy/nested/dir/big.bin")).size, 6 * kMiB);
  EXPECT_NE(stat_of(path("rl/orig/nested/dir/big.bin")).ino, 0u);
}

TEST_F(FixtureLayout, Snapshots) {
  build_layout("snapshots", "sn");
  // Subvolume roots have inode number 256.
  for (const char* sub : {"sn/vol", "sn/snap-ro", "sn/snap-rw"})
    EXPECT_EQ(stat_of(path(sub)).ino, 256u) << sub << " is not a subvolume";

  auto vol = subvolume_show("sn/vol");
  auto ro = subvolume_show("sn/snap-ro");
  auto rw = subvolume_show("sn/snap-rw");
  ASSERT_FALSE(vol["UUID"].empty());
  EXPECT_EQ(vol["Parent UUID"], "-");
  EXPECT_EQ(ro["Parent UUID"], vol["UUID"]);
  EXPECT_EQ(rw["Parent UUID"], vol["UUID"]);
  EXPECT_NE(ro["Flags"].find("readonly"), std::string::npos) << ro["Flags"];
  EXPECT_EQ(rw["Flags"].find("readonly"), std::string::npos) << rw["Flags"];
  EXPECT_EQ(vol["Flags"].find("readonly"), std::string::npos) << vol["Flags"];
  EXPECT_EQ(trim(sh("btrfs property get -ts " + q("sn/snap-ro") + " ro")), "ro=true");
  EXPECT_EQ(trim(sh("btrfs property get -ts " + q("sn/snap-rw") + " ro")), "ro=false");

  // The snapshots hold vol's files on vol's extents.
  const auto files = files_under("sn/vol");
  EXPECT_EQ(files.size(), 5u);
  EXPECT_EQ(files, files_under("sn/snap-ro"));
  for (const auto& name : files) {
    for (const char* snap : {"sn/snap-ro/", "sn/snap-rw/"}) {
      EXPECT_TRUE(same_content("sn/vol/" + name, snap + name)) << name;
      const auto mine = extents("sn/vol/" + name);
      const auto theirs = extents(snap + name);
      ASSERT_EQ(mine.size(), theirs.size()) << name;
      for (size_t i = 0; i < mine.size(); ++i) {
        EXPECT_EQ(mine[i].physical, theirs[i].physical) << snap << name;
        EXPECT_TRUE(theirs[i].has("shared")) << snap << name;
      }
    }
  }
  // snap-rw gained one file after the snapshot: an unshared copy of vol's big.bin.
  EXPECT_EQ(files_under("sn/snap-rw").size(), files.size() + 1);
  EXPECT_TRUE(same_content("sn/vol/data/big.bin", "sn/snap-rw/added-copy-of-big.bin"));
  EXPECT_FALSE(any_extent("sn/snap-rw/added-copy-of-big.bin", "shared"));
}

TEST_F(FixtureLayout, Compressed) {
  build_layout("compressed", "cz");
  EXPECT_EQ(trim(sh("btrfs property get " + q("cz/zstd") + " compression")), "compression=zstd");
  EXPECT_EQ(trim(sh("btrfs property get " + q("cz/plain") + " compression")), "compression=none");
  const auto files = files_under("cz/zstd");
  EXPECT_EQ(files, (std::vector<std::string>{"b64-1m.txt", "hex-130k.txt", "hex-4m.txt", "random-1m.bin"}));
  ASSERT_EQ(files, files_under("cz/plain"));

  for (const auto& name : files) {
    EXPECT_TRUE(same_content("cz/zstd/" + name, "cz/plain/" + name)) << name;
    const auto plain = extents("cz/plain/" + name);
    ASSERT_FALSE(plain.empty()) << name;
    for (const auto& e : plain) {
      EXPECT_FALSE(e.has("encoded")) << "plain/" << name << "\n" << describe(plain);
      EXPECT_FALSE(e.has("shared")) << "plain/" << name << "\n" << describe(plain);
    }
    EXPECT_NE(lsattr_flags("cz/plain/" + name).find('m'), std::string::npos) << name;
  }
  // Text compresses: the block-aligned text files are encoded in extents of at most 128 KiB.
  // Writeback under load may cut a range down to a page or two, too small to save a block by
  // compressing: such slivers stay plain, so the claim is about the bytes, not every extent.
  for (const char* name : {"cz/zstd/hex-4m.txt", "cz/zstd/b64-1m.txt"}) {
    const auto list = extents(name);
    ASSERT_FALSE(list.empty()) << name;
    uint64_t encoded = 0, total = 0;
    for (const auto& e : list) {
      EXPECT_LE(e.length, 128 * kKiB) << name;
      total += e.length;
      if (e.has("encoded")) {
        encoded += e.length;
      } else {
        EXPECT_LT(e.length, 128 * kKiB) << name << ": a full 128 KiB piece left plain\n"
                                        << describe(list);
      }
    }
    EXPECT_GE(encoded * 10, total * 9) << name << "\n" << describe(list);
  }
  EXPECT_GE(extents("cz/zstd/hex-4m.txt").size(), 32u);
  // 130 KiB: the first 128 KiB is encoded; the 2 KiB tail cannot save a block and is not.
  const auto tail = extents("cz/zstd/hex-130k.txt");
  ASSERT_FALSE(tail.empty());
  EXPECT_TRUE(tail.front().has("encoded")) << describe(tail);
  EXPECT_EQ(tail.front().length, 128 * kKiB) << describe(tail);
  EXPECT_FALSE(tail.back().has("encoded")) << describe(tail);
  EXPECT_EQ(tail.back().logical, 128 * kKiB) << describe(tail);
  // Random bytes fail the compression heuristic: written plain even in the zstd dir.
  EXPECT_FALSE(any_extent("cz/zstd/random-1m.bin", "encoded"));
}

TEST_F(FixtureLayout, Nodatacow) {
  build_layout("nodatacow", "nc");
  EXPECT_NE(lsattr_flags("nc/nocow").find('C'), std::string::npos);
  EXPECT_EQ(lsattr_flags("nc/cow").find('C'), std::string::npos);
  const auto files = files_under("nc/nocow");
  EXPECT_EQ(files, (std::vector<std::string>{"a-again.bin", "a.bin", "b.bin", "c.bin"}));
  ASSERT_EQ(files, files_under("nc/cow"));
  for (const auto& name : files) {
    EXPECT_NE(lsattr_flags("nc/nocow/" + name).find('C'), std::string::npos) << name;
    EXPECT_EQ(lsattr_flags("nc/cow/" + name).find('C'), std::string::npos) << name;
    EXPECT_TRUE(same_content("nc/nocow/" + name, "nc/cow/" + name)) << name;
    EXPECT_FALSE(any_extent("nc/nocow/" + name, "shared")) << name;
    EXPECT_FALSE(any_extent("nc/cow/" + name, "shared")) << name;
  }
  EXPECT_TRUE(same_content("nc/nocow/a.bin", "nc/nocow/a-again.bin"));
  EXPECT_FALSE(same_content("nc/nocow/a.bin", "nc/nocow/b.bin"));
  EXPECT_EQ(stat_of(path("nc/cow/b.bin")).size, 2 * kMiB + 300);
}

TEST_F(FixtureLayout, Inline) {
  build_layout("inline", "il");
  const auto files = files_under("il");
  EXPECT_EQ(files.size(), 16u);
  for (const auto& name : files) {
    const auto size = stat_of(path("il/" + name)).size;
    EXPECT_GE(size, 1u) << name;
    EXPECT_LE(size, 2000u) << name;
    const auto list = extents("il/" + name);
    ASSERT_EQ(list.size(), 1u) << name << "\n" << describe(list);
    EXPECT_TRUE(list[0].has("inline")) << name << "\n" << describe(list);
    if (name.rfind("twins/", 0) != 0) {
      EXPECT_TRUE(same_content("il/" + name, "il/twins/" + name)) << name;
    }
  }
  EXPECT_EQ(stat_of(path("il/size-1")).size, 1u);
  EXPECT_EQ(stat_of(path("il/size-2000")).size, 2000u);
}

TEST_F(FixtureLayout, Prealloc) {
  build_layout("prealloc", "pa");
  // fallocate -l 4M: nothing but unwritten extents, reading as zeros.
  const auto full = extents("pa/full-4m");
  ASSERT_FALSE(full.empty());
  for (const auto& e : full) EXPECT_TRUE(e.has("unwritten")) << describe(full);
  EXPECT_EQ(stat_of(path("pa/full-4m")).size, 4 * kMiB);
  EXPECT_TRUE(all_zero(read_file(path("pa/full-4m")), 0, 4 * kMiB));

  // 4 MiB preallocated, [1 MiB, 2 MiB) written: unwritten around one written extent.
  const auto partial = extents("pa/partial");
  EXPECT_TRUE(std::any_of(partial.begin(), partial.end(), [](const Extent& e) { return e.has("unwritten"); }))
      << describe(partial);
  EXPECT_TRUE(std::any_of(partial.begin(), partial.end(), [](const Extent& e) {
    return !e.has("unwritten") && e.logical == kMiB && e.length == kMiB;
  })) << describe(partial);
  const std::string data = read_file(path("pa/partial"));
  ASSERT_EQ(data.size(), 4 * kMiB);
  EXPECT_TRUE(all_zero(data, 0, kMiB));
  EXPECT_EQ(data.substr(kMiB, kMiB), read_file(path("pa/written-1m")));
  EXPECT_TRUE(all_zero(data, 2 * kMiB, 2 * kMiB));
  EXPECT_FALSE(all_zero(data, kMiB, kMiB));

  // 1 MiB of data, then 3 MiB preallocated past EOF (fallocate --keep-size).
  EXPECT_EQ(stat_of(path("pa/past-eof")).size, kMiB);
  const auto past = extents("pa/past-eof");
  EXPECT_TRUE(std::any_of(past.begin(), past.end(), [](const Extent& e) {
    return e.has("unwritten") && e.logical >= kMiB;
  })) << describe(past);
  EXPECT_GE(stat_of(path("pa/past-eof")).blocks * 512, 4 * kMiB);
}

TEST_F(FixtureLayout, Sparse) {
  build_layout("sparse", "sp");
  const auto middle = stat_of(path("sp/middle"));
  EXPECT_EQ(middle.size, 10 * kMiB);
  EXPECT_LT(middle.blocks * 512, middle.size);
  const std::string m = read_file(path("sp/middle"));
  ASSERT_EQ(m.size(), 10 * kMiB);
  EXPECT_TRUE(all_zero(m, 0, 4 * kMiB));
  EXPECT_EQ(m.substr(4 * kMiB, kMiB), read_file(path("sp/dense-1m")));
  EXPECT_TRUE(all_zero(m, 5 * kMiB, 5 * kMiB));
  // Also through cmp, as a reader outside this process sees it.
  sh("cmp -n 4194304 " + q("sp/middle") + " /dev/zero");
  sh("cmp -i 5242880:0 -n 5242880 " + q("sp/middle") + " /dev/zero");
  const auto mid_extents = extents("sp/middle");
  ASSERT_EQ(mid_extents.size(), 1u) << describe(mid_extents);
  EXPECT_EQ(mid_extents[0].logical, 4 * kMiB);

  const auto leading = stat_of(path("sp/leading-hole"));
  EXPECT_EQ(leading.size, 4 * kMiB);
  EXPECT_LT(leading.blocks * 512, leading.size);
  const std::string l = read_file(path("sp/leading-hole"));
  EXPECT_TRUE(all_zero(l, 0, 3 * kMiB));
  EXPECT_EQ(l.substr(3 * kMiB), read_file(path("sp/dense-tail")));
  const auto lead_extents = extents("sp/leading-hole");
  ASSERT_FALSE(lead_extents.empty());
  EXPECT_EQ(lead_extents[0].logical, 3 * kMiB) << describe(lead_extents);
  // The dense twins are not sparse.
  const auto dense = stat_of(path("sp/dense-1m"));
  EXPECT_EQ(dense.blocks * 512, dense.size);
}

TEST_F(FixtureLayout, Hardlinks) {
  build_layout("hardlinks", "hl");
  const auto first = stat_of(path("hl/d1/file.bin"));
  EXPECT_EQ(first.nlink, 3u);
  for (const char* name : {"hl/d2/link.bin", "hl/d3/deeper/another name.bin"}) {
    const auto other = stat_of(path(name));
    EXPECT_EQ(other.ino, first.ino) << name;
    EXPECT_EQ(other.nlink, 3u) << name;
  }
  EXPECT_EQ(trim(sh("stat -c %h " + q("hl/d3/deeper/another name.bin"))), "3");
  const auto copy = stat_of(path("hl/copy/separate-copy.bin"));
  EXPECT_NE(copy.ino, first.ino);
  EXPECT_EQ(copy.nlink, 1u);
  EXPECT_TRUE(same_content("hl/d1/file.bin", "hl/copy/separate-copy.bin"));
  EXPECT_FALSE(any_extent("hl/copy/separate-copy.bin", "shared"));
  EXPECT_EQ(files_under("hl").size(), 4u);
}

TEST_F(FixtureLayout, OddNames) {
  build_layout("odd-names", "on");
  const std::vector<std::string> odd = {
      "with space",
      " leading and trailing space ",
      "new\nline",
      "tab\there",
      "-leading-dash",
      "invalid-utf8-\xff\xfe",
      "long-" + std::string(250, 'x'),
      "quotes ' \" and back\\slash",
      "glob *?[x]{a,b}$HOME",
      "\xc3\xbcn\xc3\xaf\x63\xc3\xb8\x64\xc3\xa9-\xe5\x90\x8d\xe5\x89\x8d",  // ünïcødé-名前
      "dir\nwith newline/inner.bin",
  };
  EXPECT_EQ(odd[6].size(), 255u);
  std::vector<std::string> expected;
  for (const auto& name : odd) {
    expected.push_back(name);
    expected.push_back("twins/" + name);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(files_under("on"), expected);
  for (const auto& name : odd) {
    EXPECT_GT(stat_of(path("on/" + name)).size, 4 * kKiB) << name;
    EXPECT_TRUE(same_content("on/" + name, "on/twins/" + name)) << name;
    EXPECT_FALSE(any_extent("on/twins/" + name, "shared")) << name;
  }
  EXPECT_FALSE(same_content("on/with space", "on/tab\there"));
}

TEST_F(FixtureLayout, LayoutDiffers) {
  build_layout("layout-differs", "ld");
  EXPECT_EQ(stat_of(path("ld/one")).size, 8 * kMiB);
  EXPECT_TRUE(same_content("ld/one", "ld/two"));
  sh("cmp " + q("ld/one") + " " + q("ld/two"));
  const auto one = extents("ld/one");
  const auto two = extents("ld/two");
  std::vector<std::pair<uint64_t, uint64_t>> one_bounds, two_bounds;
  for (const auto& e : one) one_bounds.emplace_back(e.logical, e.length);
  for (const auto& e : two) two_bounds.emplace_back(e.logical, e.length);
  EXPECT_NE(one_bounds, two_bounds) << "one:\n" << describe(one) << "two:\n" << describe(two);
  EXPECT_GE(two.size(), 2u) << describe(two);
  // As designed: 3 MiB at 0, 1 MiB at 3 MiB, 4 MiB at 4 MiB.
  for (uint64_t start : {0 * kMiB, 3 * kMiB, 4 * kMiB}) {
    EXPECT_TRUE(std::any_of(two.begin(), two.end(), [&](const Extent& e) { return e.logical == start; }))
        << "no extent of two starts at " << start << "\n" << describe(two);
  }
  for (const auto& e : two) EXPECT_FALSE(e.has("shared")) << describe(two);
}

TEST_F(FixtureLayout, BackupPool) {
  build_layout("backup-pool", "bp");
  // Two subvolumes and five read-only snapshots, each taken of A or B.
  auto a = subvolume_show("bp/A");
  auto b = subvolume_show("bp/B");
  EXPECT_EQ(a["Parent UUID"], "-");
  EXPECT_EQ(a["Flags"].find("readonly"), std::string::npos);
  EXPECT_EQ(b["Flags"].find("readonly"), std::string::npos);
  for (const char* snap : {"A.1", "A.2", "A.3", "B.1", "B.2"}) {
    auto s = subvolume_show(std::string("bp/snapshots/") + snap);
    EXPECT_NE(s["Flags"].find("readonly"), std::string::npos) << snap;
    EXPECT_EQ(s["Parent UUID"], (snap[0] == 'A' ? a : b)["UUID"]) << snap;
  }
  // Machine A's tree, edited between snapshots.
  EXPECT_EQ(files_under("bp/snapshots/A.1").size(), 35u);
  EXPECT_EQ(files_under("bp/snapshots/A.2").size(), 35u);  // + img-7, - conf-10
  EXPECT_EQ(files_under("bp/snapshots/A.3").size(), 37u);  // + img-8, doc-13
  EXPECT_EQ(files_under("bp/A").size(), 38u);              // + img-9
  EXPECT_EQ(stat_of(path("bp/snapshots/A.1/var/log/syslog")).size, 256 * kKiB);
  EXPECT_EQ(stat_of(path("bp/A/var/log/syslog")).size, 448 * kKiB);
  EXPECT_FALSE(same_content("bp/snapshots/A.1/home/docs/doc-03.txt", "bp/snapshots/A.2/home/docs/doc-03.txt"));
  EXPECT_FALSE(same_content("bp/snapshots/A.3/var/db/data.db", "bp/A/var/db/data.db"));
  // The snapshots share what did not change: the in-place database rewrite moved 128 KiB.
  const auto db1 = extents("bp/snapshots/A.1/var/db/data.db");
  const auto db2 = extents("bp/snapshots/A.2/var/db/data.db");
  EXPECT_EQ(db1.front().physical, db2.front().physical) << describe(db1) << describe(db2);
  EXPECT_GT(db2.size(), db1.size()) << describe(db2);
  // Machine B: its backups are unshared copies of A's files, plus its own.
  EXPECT_EQ(files_under("bp/snapshots/B.1").size(), 36u);  // A.2's home (24) and etc (9), 3 notes
  for (const auto& name : files_under("bp/snapshots/A.2/home")) {
    EXPECT_TRUE(same_content("bp/snapshots/A.2/home/" + name, "bp/snapshots/B.1/home/" + name)) << name;
    if (stat_of(path("bp/snapshots/B.1/home/" + name)).size > 2048) {
      EXPECT_NE(extents("bp/snapshots/B.1/home/" + name).front().physical,
                extents("bp/snapshots/A.2/home/" + name).front().physical) << name;
    }
  }
  EXPECT_TRUE(same_content("bp/snapshots/A.3/home/docs/doc-13.txt", "bp/snapshots/B.2/home/docs/doc-13.txt"));
  EXPECT_FALSE(std::filesystem::exists(path("bp/snapshots/B.2/home/photos/img-9.jpg")));
  // B's latest backup, in no snapshot: A's new photo, A.3's database, a copy of a note.
  EXPECT_TRUE(same_content("bp/A/home/photos/img-9.jpg", "bp/B/home/photos/img-9.jpg"));
  EXPECT_TRUE(same_content("bp/snapshots/A.3/var/db/data.db", "bp/B/var/db/data.db"));
  EXPECT_TRUE(same_content("bp/B/b-notes/note-1", "bp/B/tmp/note-1.bak"));
  for (const char* f : {"bp/B/home/photos/img-9.jpg", "bp/B/var/db/data.db", "bp/B/tmp/note-1.bak",
                        "bp/B/b-notes/new-own.bin"})
    for (const auto& e : extents(f)) EXPECT_FALSE(e.has("shared")) << f;
  // What only B holds (as btrfs counts it): its latest backup and its new file.
  const auto du = split(sh("btrfs filesystem du -s --raw " + q("bp/B")), '\n');
  ASSERT_EQ(du.size(), 2u);
  std::istringstream row(du[1]);
  uint64_t total = 0, exclusive = 0;
  row >> total >> exclusive;
  EXPECT_EQ(exclusive, 3 * kMiB + 64 * kKiB + 512 * kKiB);
}

// Real disk images (issue #39): the host's own trees on ext4, three ways.
TEST_F(FixtureLayout, Ext4Images) {
  ASSERT_NO_FATAL_FAILURE(build_layout("ext4-images", "ei"));
  EXPECT_EQ(files_under("ei"), (std::vector<std::string>{"a.raw", "b.raw", "c.raw"}));
  const uint64_t image = 96 * kMiB, at = 24 * kMiB, inserted = 68 * kKiB;
  EXPECT_EQ(stat_of(path("ei/a.raw")).size, image);
  EXPECT_EQ(stat_of(path("ei/b.raw")).size, image);
  EXPECT_EQ(stat_of(path("ei/c.raw")).size, image + inserted);
  static const std::regex field(R"(^([A-Za-z ]+):\s+(\d+)\s*$)");
  for (const char* name : {"a.raw", "b.raw", "c.raw"}) {
    const std::string img = std::string("ei/") + name;
    EXPECT_EQ(trim(sh("blkid -p -o value -s TYPE " + q(img))), "ext4") << name;
    std::map<std::string, uint64_t> header;  // dumpe2fs -h, the numeric fields
    for (const auto& text : split(sh("dumpe2fs -h " + q(img) + " 2>/dev/null"), '\n')) {
      std::smatch m;
      if (std::regex_match(text, m, field)) header[m[1]] = std::stoull(m[2]);
    }
    EXPECT_EQ(header["Block size"], 4096u) << name;
    EXPECT_EQ(header["Block count"] * 4096, image) << name;  // c's superblock is a's
    // Two thirds of its blocks in use (real files, and ext4's own metadata).
    EXPECT_GE((header["Block count"] - header["Free blocks"]) * 10, header["Block count"] * 6) << name;
    // Sparse: never-written blocks are holes.
    uint64_t data = 0;
    for (const auto& [start, end] : data_ranges(path(img))) data += end - start;
    EXPECT_LT(data, image) << name;
    EXPECT_GT(data, image / 2) << name;
  }
  // c: a's bytes, 68 KiB of fixture data at a quarter of the image, then the rest of a's.
  sh("cmp -n " + std::to_string(at) + " " + q("ei/a.raw") + " " + q("ei/c.raw"));
  sh("cmp -i " + std::to_string(at) + ":" + std::to_string(at + inserted) + " " + q("ei/a.raw") + " " +
     q("ei/c.raw"));
  {
    const std::string c = read_file(path("ei/c.raw"));
    ASSERT_EQ(c.size(), image + inserted);
    for (uint64_t block = at; block < at + inserted; block += 4096)
      EXPECT_FALSE(all_zero(c, block, 4096)) << "inserted block at " << block;
  }
  // ... and a's holes stay holes there: c's data ranges are a's, shifted past the insertion,
  // plus the insertion (merged where they touch).
  std::vector<std::pair<uint64_t, uint64_t>> expected;
  for (auto [start, end] : data_ranges(path("ei/a.raw"))) {
    if (start < at && end > at) {  // split at the insertion
      expected.emplace_back(start, at);
      start = at;
    }
    if (start >= at) start += inserted, end += inserted;
    expected.emplace_back(start, end);
  }
  expected.emplace_back(at, at + inserted);
  std::sort(expected.begin(), expected.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : expected) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  EXPECT_EQ(data_ranges(path("ei/c.raw")), merged);

  // The trees, mounted read-only: a holds them in one order, b after a 1 MiB file in the
  // other; /usr/include/linux and /usr/include/c++ whole, then the compiler's library
  // directory as far as it fits.
  const std::string mnt = "/tmp/btrdedupe-ext4-images-" + std::to_string(::getpid());
  const std::string ma = mnt + "/a", mb = mnt + "/b";
  sh("mkdir -p " + shell_quote(ma) + " " + shell_quote(mb));
  sh("mount -o loop,ro " + q("ei/a.raw") + " " + shell_quote(ma));
  sh("mount -o loop,ro " + q("ei/b.raw") + " " + shell_quote(mb));
  const std::string lib = trim(sh("dirname \"$(gcc -print-libgcc-file-name)\""));
  const std::string version = lib.substr(lib.rfind('/') + 1);
  const auto listing = [&](const std::string& dir) {
    return sh("cd " + shell_quote(dir) + " && ls -A");
  };
  EXPECT_EQ(listing(ma), "1\n2\n3\nlost+found\n");
  EXPECT_EQ(listing(mb), "1\n2\n3\nlost+found\nrandom.bin\n");
  EXPECT_EQ(listing(ma + "/1"), "linux\n");
  EXPECT_EQ(listing(ma + "/2"), "c++\n");
  EXPECT_EQ(listing(ma + "/3"), version + "\n");
  EXPECT_EQ(stat_of(mb + "/random.bin").size, kMiB);
  const std::string diff = "diff -r --no-dereference ";
  sh(diff + "/usr/include/linux " + shell_quote(ma + "/1/linux"));
  sh(diff + "/usr/include/c++ " + shell_quote(ma + "/2/c++"));
  const auto picked = split(listing(ma + "/3/" + version), '\n');
  EXPECT_GE(picked.size(), 2u);
  for (const auto& entry : picked)
    sh(diff + shell_quote(lib + "/" + entry) + " " + shell_quote(ma + "/3/" + version + "/" + entry));
  sh(diff + shell_quote(ma + "/1") + " " + shell_quote(mb + "/3"));
  sh(diff + shell_quote(ma + "/2") + " " + shell_quote(mb + "/2"));
  sh(diff + shell_quote(ma + "/3") + " " + shell_quote(mb + "/1"));
  // The files fill at least 60% of each image (du: blocks of files and directories).
  for (const auto& m : {ma, mb}) {
    const uint64_t kib = std::stoull(sh("du -sk " + shell_quote(m) + " | cut -f1"));
    EXPECT_GE(kib * kKiB * 10, image * 6) << m << ": " << kib << " KiB";
  }
  sh("umount " + shell_quote(ma) + " && umount " + shell_quote(mb) + " && rm -r " + shell_quote(mnt));
}

TEST_F(FixtureLayout, AllBuildsEveryLayout) {
  build_layout("all", "every");
  const std::string list = sh(std::string("bash ") + BTRDEDUPE_FIXTURES_DIR + "/build-layout --list");
  size_t layouts = 0;
  for (const auto& text : split(list, '\n')) {
    const std::string name = text.substr(0, text.find(' '));
    if (name == "all" || name == "ext4-images") continue;  // ext4-images: built on its own
    ++layouts;
    EXPECT_TRUE(std::filesystem::is_directory(path("every/" + name))) << name;
    EXPECT_FALSE(files_under("every/" + name).empty()) << name;
  }
  EXPECT_EQ(layouts, 12u);
  EXPECT_EQ(files_under("every/two-copies/a").size(), 60u);
  EXPECT_NE(subvolume_show("every/snapshots/snap-ro")["Flags"].find("readonly"), std::string::npos);
}

}  // namespace
}  // namespace btrdedupe::test
