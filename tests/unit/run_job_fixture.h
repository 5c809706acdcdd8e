// The fixture of the run_job tests without root (tests/unit/run_job_test.cpp,
// run_job_catalog_test.cpp): options for a run of an in-memory btrfs's top directory
// (tests/unit/memory_btrfs.h), run_job in it, and files written in pairs of copies.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "src/run/job.h"
#include "tests/unit/memory_btrfs.h"

namespace btrdedupe::test {

constexpr uint64_t kBlock = 4096;

inline std::vector<uint32_t> content(uint32_t first, size_t sectors) {
  std::vector<uint32_t> c(sectors);
  for (size_t i = 0; i < sectors; ++i) c[i] = first + static_cast<uint32_t>(i);
  return c;
}

inline btrfs::DedupeOutcome outcome(btrfs::DedupeStatus status, int error = 0, uint64_t bytes = 0) {
  return {status, error, bytes};
}

// A script that answers every destination of every call with `answer`.
inline MemoryBtrfs::Script always(btrfs::DedupeOutcome answer) {
  return [answer](size_t, uint64_t, size_t n) {
    return std::vector<btrfs::DedupeOutcome>(n, answer);
  };
}

class RunJobTest : public ::testing::Test {
 protected:
  ~RunJobTest() override {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(hashfile() + suffix);
  }
  JobOptions options(bool dedupe = true) const {
    JobOptions o;
    o.paths = {fs.root()};
    o.recursive = true;
    o.dedupe = dedupe;
    o.min_file_size = 0;
    o.rewrite_remainders = false;
    return o;
  }
  JobReport run(const JobOptions& o) { return run_job(o, nullptr, fs); }
  // Pairs of copies: file "a<i>" and "b<i>" hold the same `sectors` sectors.
  void write_pairs(int pairs, size_t sectors) {
    for (int i = 0; i < pairs; ++i) {
      fs.write_file("a" + std::to_string(i), content(100 * (i + 1), sectors));
      fs.write_file("b" + std::to_string(i), content(100 * (i + 1), sectors));
    }
  }
  bool shares(const std::string& x, const std::string& y) const {
    return fs.extents_of(x) == fs.extents_of(y);
  }
  std::string hashfile() const { return fs.root() + ".hashfile"; }

  MemoryBtrfs fs;
};

}  // namespace btrdedupe::test
