// A hashfile of untrusted bytes (src/catalog/catalog.h): Catalog::open must refuse it or read every
// row of it without a memory error. The input is written to a file in a private directory
// under /dev/shm (or $TMPDIR), opened, read and bound, then removed with its -wal/-shm.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/catalog/catalog.h"
#include "tools/fuzz/fuzz_util.h"

namespace {

std::string scratch_dir;

void remove_all(const std::string& f) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((f + suffix).c_str());
}

std::string scratch_file() {
  static const std::string file = [] {
    const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    scratch_dir = std::string(base) + "/btrdedupe-fuzz-catalog-XXXXXX";
    if (!::mkdtemp(scratch_dir.data())) std::abort();
    // libFuzzer ends a bounded run with exit(): leave nothing behind.
    std::atexit([] {
      remove_all(scratch_dir + "/hashfile");
      ::rmdir(scratch_dir.c_str());
    });
    return scratch_dir + "/hashfile";
  }();
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string f = scratch_file();
  remove_all(f);
  if (std::FILE* out = std::fopen(f.c_str(), "wb")) {
    if (size) std::fwrite(data, 1, size, out);
    std::fclose(out);
  }
  {
    auto c = btrdedupe::Catalog::open(f);
    if (!c) {
      fuzz::touch(c.error().message());
    } else {
      auto& cat = **c;
      if (auto scope = cat.scope()) {
        for (const auto& r : scope->roots) fuzz::touch(r);
        fuzz::touch(scope->options);
      }
      for (const auto& [id, gen] : cat.subvolume_generations())
        fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(id ^ gen);
      uint64_t some_hash = 0;
      for (const auto& [key, file] : cat.files()) {
        fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(key.inode ^ file.size ^ file.flags);
        if (file.whole_hash) some_hash = *file.whole_hash;
      }
      for (const auto& k : cat.files_with_hash(some_hash))
        fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(k.inode);
      for (const auto& k : cat.files_with_anchor(some_hash))
        fuzz::sink = fuzz::sink ^ static_cast<uint8_t>(k.inode);
      for (const auto& run : cat.runs()) fuzz::touch(run.roots);
      if (auto bound = cat.bind("00000000-0000-0000-0000-000000000000"); !bound)
        fuzz::touch(bound.error().message());
    }
  }
  remove_all(f);
  return 0;
}
