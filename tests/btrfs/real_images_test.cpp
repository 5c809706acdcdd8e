// Disk images of real trees (issue #39; fixtures/build-layout ext4-images, the test-sized
// version of tools/lib/real-images.sh): a default run frees most of what a perfect 4 KiB-block
// dedupe would (the figure computed here, from the images' data blocks), reports exactly what
// `btrfs filesystem df` moved by, frees every extent it planned to free (plan = disk) and
// leaves every image reading the same bytes. And the smallest case such images are full of: a
// file's last block, shorter than a sector, equal to another file's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/btrfs/cli_fixture.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024, kBlock = 4096;

struct FileDescriptor {
  int fd = -1;
  explicit FileDescriptor(const std::string& file) : fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC)) {
    EXPECT_GE(fd, 0) << "open " << file;
  }
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
};

// [start, end) of each data range, as SEEK_DATA/SEEK_HOLE find them (holes and, on btrfs,
// preallocated ranges are not data).
std::vector<std::pair<uint64_t, uint64_t>> data_ranges(int fd) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return ranges;
  for (off_t at = 0; at < st.st_size;) {
    const off_t start = ::lseek(fd, at, SEEK_DATA);
    if (start < 0) break;  // ENXIO: no data past `at`
    const off_t end = ::lseek(fd, start, SEEK_HOLE);
    ranges.emplace_back(start, end);
    at = end;
  }
  return ranges;
}

// What a perfect dedupe of 4 KiB blocks frees over `files`: their data blocks less their
// distinct data blocks, in bytes. Holes are no blocks; a last block short of 4 KiB is hashed
// as it reads.
struct PerfectDedupe {
  uint64_t blocks = 0;
  std::set<std::pair<uint64_t, uint64_t>> distinct;  // XXH3 128-bit sums
  void add(const std::string& file) {
    const FileDescriptor f(file);
    std::vector<char> buffer(8 * kMiB);
    for (auto [start, end] : data_ranges(f.fd)) {
      start -= start % kBlock;
      for (uint64_t at = start; at < end;) {
        const ssize_t n = ::pread(f.fd, buffer.data(), std::min<uint64_t>(end - at, buffer.size()),
                                  static_cast<off_t>(at));
        ASSERT_GT(n, 0) << file << " at " << at;
        for (ssize_t o = 0; o < n; o += static_cast<ssize_t>(kBlock)) {
          const auto sum =
              XXH3_128bits(buffer.data() + o, std::min<size_t>(kBlock, static_cast<size_t>(n - o)));
          ++blocks;
          distinct.emplace(sum.high64, sum.low64);
        }
        at += static_cast<uint64_t>(n);
      }
    }
  }
  uint64_t bytes() const { return (blocks - distinct.size()) * kBlock; }
};

// A whole file's bytes (holes read as zeros) as one XXH3 128-bit sum, and its mtime.
struct ImageState {
  uint64_t high = 0, low = 0;
  int64_t mtime_ns = 0;
  bool operator==(const ImageState&) const = default;
};

std::ostream& operator<<(std::ostream& out, const ImageState& s) {
  return out << std::hex << s.high << s.low << std::dec << " mtime " << s.mtime_ns;
}

ImageState image_state(const std::string& file) {
  const FileDescriptor f(file);
  ImageState state;
  struct stat st {};
  EXPECT_EQ(::fstat(f.fd, &st), 0) << file;
  state.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  XXH3_state_t* xxh = XXH3_createState();
  XXH3_128bits_reset(xxh);
  std::vector<char> buffer(8 * kMiB);
  for (;;) {
    const ssize_t n = ::read(f.fd, buffer.data(), buffer.size());
    EXPECT_GE(n, 0) << file;
    if (n <= 0) break;
    XXH3_128bits_update(xxh, buffer.data(), static_cast<size_t>(n));
  }
  const auto sum = XXH3_128bits_digest(xxh);
  XXH3_freeState(xxh);
  state.high = sum.high64;
  state.low = sum.low64;
  return state;
}

class RealImages : public CliTest {
 protected:
  // Three 96 MiB images and what btrfs needs around them.
  ImageOptions image_options() const override {
    ImageOptions o;
    o.size_bytes = 2ULL << 30;
    return o;
  }
  void TearDown() override {
    sh("rm -rf " + shell_quote(work("")));
    CliTest::TearDown();
  }
  // Outside the image: files the test's data is made from.
  std::string work(const std::string& name) {
    const std::string dir = "/tmp/btrdedupe-real-images-test-" + std::to_string(::getpid());
    sh("mkdir -p " + shell_quote(dir));
    return dir + "/" + name;
  }
  // Runs `btrdedupe -dr --json d` (default options): the report, and Data used's drop in
  // *df_freed.
  nlohmann::json dedupe(int64_t* df_freed) {
    const uint64_t before = data_used();
    std::string out, err;
    const int code = btrdedupe_split("-dr --json " + shell_quote(path("d")), &out, &err);
    EXPECT_EQ(code, 0) << out << err;
    *df_freed = static_cast<int64_t>(before) - static_cast<int64_t>(data_used());
    return nlohmann::json::parse(out);
  }
  // Physical offset (bytes) of the extent that maps `logical` in d/<name>, from filefrag;
  // ~0 when none does. *is_shared: whether filefrag flags it shared.
  uint64_t physical_at(const std::string& name, uint64_t logical, bool* is_shared) {
    static const std::regex line(
        R"(^\s*\d+:\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*\d+:\s*\d+:\s*(?:\d+:)?(.*)$)");
    std::istringstream in(sh("filefrag -v -b1 " + shell_quote(path("d/" + name))));
    std::string text;
    std::smatch m;
    while (std::getline(in, text)) {
      if (!std::regex_match(text, m, line)) continue;
      const uint64_t first = std::stoull(m[1]), last = std::stoull(m[2]);
      if (logical < first || logical > last) continue;
      *is_shared = m[4].str().find("shared") != std::string::npos;
      return std::stoull(m[3]) + (logical - first);
    }
    *is_shared = false;
    return ~0ULL;
  }
};

TEST_F(RealImages, ADefaultRunFreesMostOfAPerfectDedupe) {
  ASSERT_NO_FATAL_FAILURE(build_layout("ext4-images", "d"));
  const std::vector<std::string> images = {"d/a.raw", "d/b.raw", "d/c.raw"};
  PerfectDedupe perfect;
  std::vector<ImageState> before;
  for (const auto& image : images) {
    perfect.add(path(image));
    before.push_back(image_state(path(image)));
  }
  ASSERT_GT(perfect.bytes(), 0u);

  int64_t df = 0;
  const auto j = dedupe(&df);
  const int64_t freed = j["totals"]["freed_bytes"];
  const auto& space = j["filesystems"][0]["space"];
  const int64_t extents_after = space["destination_extents_after"];
  const double percent = 100.0 * static_cast<double>(freed) / static_cast<double>(perfect.bytes());
  std::cout << "[ real-images ] data blocks " << perfect.blocks << ", distinct "
            << perfect.distinct.size() << ", perfect " << perfect.bytes() << " bytes; planned "
            << space["would_free_bytes"] << ", freed " << freed << " (" << percent
            << "% of perfect), df " << df << "; destination extents "
            << space["destination_extents_before"] << " -> " << extents_after << std::endl;
  RecordProperty("perfect_bytes", std::to_string(perfect.bytes()));
  RecordProperty("freed_bytes", std::to_string(freed));
  RecordProperty("percent_of_perfect", std::to_string(percent));
  RecordProperty("destination_extents_after", std::to_string(extents_after));

  // What the report says it freed is what df shows.
  EXPECT_EQ(freed, df);
  // Plan = disk: every extent the plan counted freed is gone, none kept for any reason.
  // The images hold extents that one file references both as data and as preallocated
  // (the loop device turns mke2fs's zeroing into unwritten extents, ext4 then writes part of
  // some): such an extent stays allocated while its preallocated part is referenced.
  EXPECT_EQ(space["would_free_bytes"], space["freed_bytes"]);
  const auto& kept = space["plan_check"]["kept"];
  for (const char* reason : {"used_as_source", "not_deduped", "remainder_kept", "outside_scan"})
    EXPECT_EQ(kept[reason]["extents"], 0) << reason << ": " << space["plan_check"].dump();
  // Most of a perfect 4 KiB dedupe.
  EXPECT_GE(static_cast<double>(freed), 0.85 * static_cast<double>(perfect.bytes()))
      << freed << " of a perfect " << perfect.bytes();
  // The images read as before, and were not touched.
  EXPECT_GT(extents_after, 0);
  for (size_t i = 0; i < images.size(); ++i)
    EXPECT_EQ(image_state(path(images[i])), before[i]) << images[i];
}

// x and y: 256 KiB of their own, a 64 KiB hole, then the same 12,345 random bytes up to EOF:
// three whole blocks and 57 bytes, each tail in an extent of its own (16 KiB on disk).
// FIDEDUPERANGE shares a range that ends at both files' EOF, so a default run shares the
// tails and frees one of their extents.
TEST_F(RealImages, AnUnalignedSharedTailIsSharedByDefault) {
  const uint64_t head = 256 * kKiB, tail_at = head + 64 * kKiB, tail = 12345;
  const auto tail_file = work("tail");
  sh("head -c " + std::to_string(tail) + " /dev/urandom > " + shell_quote(tail_file));
  sh("mkdir " + shell_quote(path("d")));
  for (const char* name : {"x", "y"}) {
    const auto file = shell_quote(path(std::string("d/") + name));
    // dd, never cat or cp: those may reflink (copy_file_range).
    sh("head -c " + std::to_string(head) + " /dev/urandom > " + file + " && dd if=" +
       shell_quote(tail_file) + " of=" + file + " bs=" + std::to_string(tail) + " seek=" +
       std::to_string(tail_at) + " oflag=seek_bytes conv=notrunc status=none");
  }
  sh("sync");
  for (const char* name : {"x", "y"}) {
    const auto size = sh("stat -c %s " + shell_quote(path(std::string("d/") + name)));
    ASSERT_EQ(std::stoull(size), tail_at + tail) << name;
  }
  bool x_shared = false, y_shared = false;
  ASSERT_NE(physical_at("x", tail_at, &x_shared), physical_at("y", tail_at, &y_shared));
  const auto before = state("d");

  int64_t df = 0;
  const auto j = dedupe(&df);
  // The tail's first byte and its last (in the short last block) on the same disk bytes.
  const uint64_t last = tail_at + tail - 1;
  const uint64_t x = physical_at("x", tail_at, &x_shared), y = physical_at("y", tail_at, &y_shared);
  bool x_last_shared = false, y_last_shared = false;
  const uint64_t x_last = physical_at("x", last, &x_last_shared),
                 y_last = physical_at("y", last, &y_last_shared);
  std::cout << "[ unaligned-tail ] deduped " << j["totals"]["bytes_deduped"] << ", freed "
            << j["totals"]["freed_bytes"] << ", df " << df << "; tails at " << x << " and " << y
            << ", their last bytes at " << x_last << " and " << y_last << std::endl;
  const auto filefrag = [&] {
    return sh("filefrag -v " + shell_quote(path("d/x")) + " " + shell_quote(path("d/y")));
  };
  EXPECT_EQ(x, y) << "the tails do not share an extent\n" << filefrag();
  EXPECT_EQ(x_last, y_last) << "the tails' last blocks are not shared\n" << filefrag();
  EXPECT_TRUE(x_shared && y_shared && x_last_shared && y_last_shared) << filefrag();
  EXPECT_EQ(state("d"), before);  // same bytes, same mtimes
  EXPECT_EQ(j["totals"]["freed_bytes"], df);
  EXPECT_EQ(df, static_cast<int64_t>(16 * kKiB));  // one tail's extent
  // The heads are the files' own.
  EXPECT_NE(physical_at("x", 0, &x_shared), physical_at("y", 0, &y_shared));
}

}  // namespace
}  // namespace btrdedupe::test
