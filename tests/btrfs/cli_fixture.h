// The btrdedupe binary run as users and scripts run it, on a test's own btrfs image.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>

#include "support/btrfs_image.h"
#include "support/shell.h"
#include "tests/btrfs/tree_search_helpers.h"

namespace btrdedupe::test {

// The suite was told to read by paths: ctest runs the black-box tests twice, the second
// time ("paths." tests) with BTRDEDUPE_TEST_READER=paths, so each behaviour is checked
// through both readers.
inline bool walking() {
  const char* reader = std::getenv("BTRDEDUPE_TEST_READER");
  return reader && std::string(reader) == "paths";
}
// The binary, with the reader the suite was told to use.
// A behaviour only the tree reader has (subvolume selections, tree counts, remainder
// rewrites, windows) is skipped by the paths pass with `if (walking()) GTEST_SKIP() << why`.
inline std::string binary() {
  return std::string(BTRDEDUPE_BINARY) + (walking() ? " --reader=paths" : "");
}

class CliTest : public BtrfsTest {
 protected:
  CommandResult btrdedupe(const std::string& args) {
    return run_command(binary() + " " + args);
  }
  // stdout to `out`, stderr to `err` (files outside the scanned directory); returns the code.
  int btrdedupe_split(const std::string& args, std::string* out, std::string* err,
                      const std::string& stdin_file = "/dev/null") {
    const auto o = path("stdout.txt"), e = path("stderr.txt");
    const auto r = run_command(binary() + " " + args + " <" +
                               shell_quote(stdin_file) + " >" + shell_quote(o) + " 2>" +
                               shell_quote(e));
    *out = read_file(o);
    *err = read_file(e);
    sh("rm -f " + shell_quote(o) + " " + shell_quote(e));
    return r.exit_code;
  }
  // Data used, in bytes, by `btrfs filesystem df` after a filesystem sync: what a
  // dedupe's freed space must match.
  uint64_t data_used() {
    const std::string df = sh("btrfs filesystem sync " + shell_quote(path("")) +
                              " >/dev/null && btrfs filesystem df -b " + shell_quote(path("")));
    std::smatch m;
    EXPECT_TRUE(std::regex_search(df, m, std::regex("Data, [^:]*: total=[0-9]+, used=([0-9]+)")))
        << df;
    return m.empty() ? 0 : std::stoull(m[1]);
  }
  // The file's EXTENT_DATA items as its subvolume tree holds them. A test that needs a file
  // in one extent checks this, not filefrag: FIEMAP merges physically adjacent items, and
  // a write split under load (another test's sync) leaves two that may be adjacent.
  size_t extent_items(const std::string& rel) {
    const auto fd = open_or_fail(path(rel));
    return inode_items(fd.get(), inode_of(path(rel)), BTRFS_EXTENT_DATA_KEY).size();
  }
  bool shared(const std::string& rel) {
    return sh("filefrag -v " + shell_quote(path(rel))).find("shared") != std::string::npos;
  }
  // Two unshared copies of `bytes` random bytes: d/<name> and d/<name>.copy.
  void twins(const std::string& name, size_t bytes) {
    sh("mkdir -p " + shell_quote(path("d")) + " && cd " + shell_quote(path("d")) +
       " && head -c " + std::to_string(bytes) + " /dev/urandom > " + shell_quote(name) +
       " && cp --reflink=never " + shell_quote(name) + " " + shell_quote(name + ".copy") +
       " && sync");
  }
  std::string state(const std::string& rel) {
    return sh("cd " + shell_quote(path(rel)) +
              " && find . -type f -printf '%p %T@\\n' | sort"
              " && find . -type f -print0 | sort -z | xargs -0 -r sha256sum");
  }
};

}  // namespace btrdedupe::test
