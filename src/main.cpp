#include <cstdio>

int main() {
  std::puts("btrdedupe " BTRDEDUPE_VERSION);
  return 0;
}
