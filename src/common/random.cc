#include "common/random.h"

#include <errno.h>
#include <sys/random.h>

#include <vector>

namespace tw {

std::string RandomHex(size_t n) {
  std::vector<unsigned char> raw(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(raw.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;  // cannot happen on Linux >= 3.17 once the pool is initialised
    }
    got += static_cast<size_t>(r);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned char b : raw) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace tw
