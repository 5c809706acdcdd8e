// The remainder rewrite's handling of what the kernel says (src/dedupe/remainder_rewrite.h), with
// a scripted RewriteKernel: extents held by more than their remainders are not written, a
// refused copy or ENOSPC falls back and ends the phase, DIFFERS leaves that remainder. The
// files are ordinary files in a temporary directory (only opened and fstat'ed).
#include "src/dedupe/remainder_rewrite.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace btrdedupe {
namespace {

constexpr uint64_t kSector = 4096;

class ScriptedRewriteKernel final : public RewriteKernel {
 public:
  std::function<btrfs::Result<std::vector<btrfs::ExtentRef>>(uint64_t)> references;
  std::function<int(size_t)> copy_error = [](size_t) { return 0; };  // by copy, from 0
  std::function<btrfs::DedupeOutcome(size_t)> outcome = [](size_t) {
    return btrfs::DedupeOutcome{btrfs::DedupeStatus::Same, 0, 0};  // bytes: filled below
  };
  size_t copies = 0, dedupes = 0, commits = 0;

  void commit(int) override { ++commits; }
  btrfs::Result<std::vector<btrfs::ExtentRef>> extent_references(int, uint64_t bytenr) override {
    return references(bytenr);
  }
  btrfs::Result<btrfs::Fd> unnamed_copy(int, int, uint64_t, uint64_t) override {
    if (const int e = copy_error(copies++)) return btrfs::Error{e, "O_TMPFILE"};
    return btrfs::Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  btrfs::Result<uint64_t> disk_bytes(int, uint64_t, uint64_t length, uint32_t) override {
    return length / 2;  // as if compressed
  }
  btrfs::Result<btrfs::DedupeCall> dedupe_range(
      int, uint64_t, uint64_t length, std::span<const btrfs::DedupeDestination>) override {
    auto o = outcome(dedupes++);
    if (o.status == btrfs::DedupeStatus::Same && o.bytes_deduped == 0) o.bytes_deduped = length;
    return btrfs::DedupeCall{length, length, {o}};
  }
};

class RemainderRewriteAnswers : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/btrdedupe-rewrite-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
    scan_.fs.sectorsize = kSector;
    scan_.roots.push_back({dir_, false});
    options_.kernel = &kernel_;
    // By default the references are exactly the planned remainders.
    kernel_.references = [this](uint64_t bytenr) -> btrfs::Result<std::vector<btrfs::ExtentRef>> {
      std::vector<btrfs::ExtentRef> refs;
      for (const auto& e : plan_.extents)
        if (e.bytenr == bytenr)
          for (const auto& r : e.ranges)
            refs.push_back({scan_.files[r.file].inode, r.offset, scan_.files[r.file].subvolume});
      return refs;
    };
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  uint32_t add_file(uint64_t size) {
    const auto f = static_cast<uint32_t>(scan_.files.size());
    const std::string name = "f" + std::to_string(f), p = dir_ + "/" + name;
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0) << p;
    EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    ::close(fd);
    ScannedFile file;
    file.subvolume = 5;
    file.inode = st.st_ino;
    file.size = size;
    file.mtime_sec = st.st_mtim.tv_sec;
    file.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    file.path_node = scan_.paths.add(PathTable::kRoot, name);
    scan_.files.push_back(file);
    return f;
  }
  // An extent at `bytenr` whose remainder is the last `tail` bytes of a new file.
  void add_remainder(uint64_t bytenr, uint64_t tail) {
    const auto f = add_file(64 * kSector);
    plan_.extents.push_back({bytenr, 64 * kSector, {{f, 64 * kSector - tail, tail}}, false, {}});
    plan_.bytes += tail;
  }
  RewriteStats run() { return rewrite_remainders(scan_, plan_, options_); }

  std::string dir_;
  ScanResult scan_;
  RemainderPlan plan_;
  RewriteOptions options_;
  ScriptedRewriteKernel kernel_;
};

TEST_F(RemainderRewriteAnswers, RewritesAndMeasuresTheNewExtents) {
  add_remainder(1 << 20, 8 * kSector);
  add_remainder(2 << 20, 4 * kSector);
  const auto s = run();
  EXPECT_EQ(s.extents_rewritten, 2u);
  EXPECT_EQ(s.ranges_rewritten, 2u);
  EXPECT_EQ(s.bytes_written, 12 * kSector);
  EXPECT_EQ(s.disk_bytes_allocated, 6 * kSector);
  EXPECT_EQ(s.allocated_by_subvolume.at(5), 6 * kSector);
  EXPECT_EQ(s.ranges_fell_back, 0u);
  EXPECT_EQ(kernel_.commits, 2u);  // before the references are read, before measuring
}

// More references than the remainders (a round left part of it, or a snapshot holds it):
// nothing is written for that extent, and that is no fallback.
TEST_F(RemainderRewriteAnswers, AnExtentHeldByOthersIsNotWritten) {
  add_remainder(1 << 20, 8 * kSector);
  kernel_.references = [this](uint64_t) -> btrfs::Result<std::vector<btrfs::ExtentRef>> {
    return std::vector<btrfs::ExtentRef>{{scan_.files[0].inode, 60 * kSector, 5}, {999, 0, 5}};
  };
  const auto s = run();
  EXPECT_EQ(kernel_.copies, 0u);
  EXPECT_EQ(s.extents_still_referenced, 1u);
  EXPECT_EQ(s.ranges_fell_back, 0u);
  EXPECT_EQ(s.bytes_written, 0u);
}

// Freed already (ENOENT): nothing to do.
TEST_F(RemainderRewriteAnswers, AnExtentAlreadyFreedIsLeft) {
  add_remainder(1 << 20, 8 * kSector);
  kernel_.references = [](uint64_t) -> btrfs::Result<std::vector<btrfs::ExtentRef>> {
    return btrfs::Error{ENOENT, "LOGICAL_INO"};
  };
  const auto s = run();
  EXPECT_EQ(kernel_.copies, 0u);
  EXPECT_EQ(s.ranges_fell_back, 0u);
  EXPECT_EQ(s.extents_still_referenced, 0u);
}

// ENOSPC (EDQUOT, EROFS, a refused O_TMPFILE): every later copy would fail the same way,
// so none is tried; all fall back, with the first reason.
TEST_F(RemainderRewriteAnswers, NoSpaceFallsBackAndEndsThePhase) {
  for (int code : {ENOSPC, EDQUOT, EROFS, EOPNOTSUPP}) {
    SCOPED_TRACE(code);
    plan_ = {};
    kernel_.copies = 0;
    add_remainder(1 << 20, 8 * kSector);
    add_remainder(2 << 20, 8 * kSector);
    add_remainder(3 << 20, 8 * kSector);
    kernel_.copy_error = [code](size_t) { return code; };
    const auto s = run();
    EXPECT_EQ(kernel_.copies, 1u);
    EXPECT_EQ(s.ranges_fell_back, 3u);
    EXPECT_EQ(s.extents_rewritten, 0u);
    EXPECT_EQ(s.bytes_written, 0u);
    EXPECT_NE(s.fallback_reason.find(std::strerror(code)), std::string::npos) << s.fallback_reason;
  }
}

// Another failure of one copy (EIO) leaves that remainder and goes on with the next.
TEST_F(RemainderRewriteAnswers, OtherCopyFailuresLeaveOneRemainder) {
  add_remainder(1 << 20, 8 * kSector);
  add_remainder(2 << 20, 8 * kSector);
  kernel_.copy_error = [](size_t n) { return n == 0 ? EIO : 0; };
  const auto s = run();
  EXPECT_EQ(kernel_.copies, 2u);
  EXPECT_EQ(s.ranges_fell_back, 1u);
  EXPECT_EQ(s.extents_rewritten, 1u);
}

// The file changed between the copy and the dedupe: DIFFERS, left as it was; the copy's
// bytes were written all the same.
TEST_F(RemainderRewriteAnswers, DiffersLeavesTheRemainder) {
  add_remainder(1 << 20, 8 * kSector);
  add_remainder(2 << 20, 8 * kSector);
  kernel_.outcome = [](size_t n) {
    return n == 0 ? btrfs::DedupeOutcome{btrfs::DedupeStatus::Differs, 0, 0}
                  : btrfs::DedupeOutcome{btrfs::DedupeStatus::Same, 0, 0};
  };
  const auto s = run();
  EXPECT_EQ(s.ranges_fell_back, 1u);
  EXPECT_EQ(s.extents_rewritten, 1u);
  EXPECT_EQ(s.bytes_written, 16 * kSector);
  EXPECT_EQ(s.disk_bytes_allocated, 4 * kSector);  // only the one shared
  EXPECT_NE(s.fallback_reason.find("content changed"), std::string::npos) << s.fallback_reason;
}

// A file changed since the scan (its size) is not opened: no copy.
TEST_F(RemainderRewriteAnswers, AFileChangedSinceTheScanIsNotCopied) {
  add_remainder(1 << 20, 8 * kSector);
  ASSERT_EQ(::truncate((dir_ + "/f0").c_str(), 100), 0);
  const auto s = run();
  EXPECT_EQ(kernel_.copies, 0u);
  EXPECT_EQ(s.ranges_fell_back, 1u);
}

// A stop starts no new extent.
TEST_F(RemainderRewriteAnswers, AStopStartsNothing) {
  add_remainder(1 << 20, 8 * kSector);
  std::atomic<bool> stop{true};
  options_.stop = &stop;
  const auto s = run();
  EXPECT_EQ(kernel_.copies, 0u);
  EXPECT_EQ(s.ranges_fell_back, 0u);
}

}  // namespace
}  // namespace btrdedupe

namespace btrdedupe {
namespace {

// A remainder a round reads from is written before the rounds, checked against every
// reference the scan saw (the destination ranges still hold the extent then), and only in
// that phase.
TEST_F(RemainderRewriteAnswers, ARemainderRoundsReadFromIsRewrittenBeforeThem) {
  add_remainder(1 << 20, 8 * kSector);
  auto& e = plan_.extents.back();
  e.before_rounds = true;
  const uint32_t f = e.ranges.front().file;
  e.references = {{f, 0, 56 * kSector}, {f, 56 * kSector, 8 * kSector}};
  kernel_.references = [this](uint64_t) -> btrfs::Result<std::vector<btrfs::ExtentRef>> {
    const auto ino = scan_.files[0].inode;
    return std::vector<btrfs::ExtentRef>{{ino, 0, 5}, {ino, 56 * kSector, 5}};
  };
  EXPECT_EQ(run().ranges_rewritten, 0u);  // the phase after the rounds leaves it
  options_.before_rounds = true;
  const auto s = run();
  EXPECT_EQ(s.extents_rewritten, 1u);
  EXPECT_EQ(s.bytes_written, 8 * kSector);
}

}  // namespace
}  // namespace btrdedupe
