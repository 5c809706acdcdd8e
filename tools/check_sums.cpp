// check-sums DIR: are the sums btrdedupe matches on the data's own checksums?
//
// Scans DIR as a run does (scan_tree + fingerprint), then reads every regular file and
// compares each sector's fingerprint sum with the filesystem's checksum recomputed from
// its bytes (src/fingerprint/sum_check.h). Holes, prealloc, inline and nodatasum data are skipped and
// counted. Prints one summary line and the first mismatches; exits 1 on any mismatch or
// read error, 2 on bad usage or a failed scan. Reads all the data: a maintainer's tool.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/fingerprint/fingerprint.h"
#include "src/read/scanned_file.h"
#include "src/fingerprint/sum_check.h"
#include "src/read/tree_scan.h"

namespace {

int usage() {
  std::fprintf(stderr, "usage: check-sums [--show N] DIR\n");
  return 2;
}

void print_mismatches(const btrdedupe::ScanResult& scan, const btrdedupe::SumCheck& check) {
  for (const auto& m : check.first)
    std::printf("mismatch: %s offset %llu: fingerprint %s, data %s\n",
                btrdedupe::relative_path(scan, scan.files[m.file]).c_str(),
                static_cast<unsigned long long>(m.offset), m.fingerprint.c_str(),
                m.data.c_str());
  for (const auto& e : check.errors) std::printf("read error: %s\n", e.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  size_t show = 20;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--show" && i + 1 < argc) {
      show = std::strtoul(argv[++i], nullptr, 10);
    } else if (!arg.empty() && arg[0] != '-' && dir.empty()) {
      dir = arg;
    } else {
      return usage();
    }
  }
  if (dir.empty()) return usage();
  auto scan = btrdedupe::scan_tree(dir, {});
  if (!scan) {
    std::fprintf(stderr, "check-sums: %s\n", scan.error().message().c_str());
    return 2;
  }
  auto fp = btrdedupe::fingerprint(*scan);
  if (!fp) {
    std::fprintf(stderr, "check-sums: %s\n", fp.error().message().c_str());
    return 2;
  }
  const auto check = btrdedupe::check_sums(*scan, *fp, show);
  std::printf("check-sums: %s\n", btrdedupe::summary_line(check).c_str());
  print_mismatches(*scan, check);
  return check.ok() ? 0 : 1;
}
