// Random bytes from the kernel (getrandom(2)), for identifiers that must
// not be guessed or must not repeat across processes: stream ids, the
// request-id prefix.
//
// Threads: any. Never allocates beyond the returned string; blocks only
// until the kernel's pool is initialised (once per boot).
#pragma once

#include <cstddef>
#include <string>

namespace tw {

// `n` random bytes as 2n lowercase hex digits.
std::string RandomHex(size_t n);

}  // namespace tw
