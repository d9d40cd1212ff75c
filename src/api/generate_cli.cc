#include "api/generate_cli.h"

#include <cstdio>

namespace tw::api {

int GenerateMain(int, char**, int) {
  std::fprintf(stderr, "tokenwire generate: not built yet\n");
  return 1;
}

}  // namespace tw::api
