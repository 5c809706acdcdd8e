// What a printer writes to a FILE*, as a string (an in-memory stream, no file).
#pragma once

#include <stdio.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace btrdedupe {

inline std::string capture(const std::function<void(std::FILE*)>& write) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = ::open_memstream(&buf, &size);
  write(f);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

}  // namespace btrdedupe
