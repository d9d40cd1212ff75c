// Reading a whole file into memory, with a bound: for the small files read
// at start-up (tokenizer vocabularies) and a training corpus.
//
// Threads: any. Allocation: the file's bytes, at most max_bytes. Blocking
// file I/O; never reads past max_bytes (the size is checked before reading).
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace tw {

// *out = the bytes of the regular file at `path`. Errors: "open PATH: why"
// (strerror), "PATH: not a regular file", "PATH: N bytes, over the limit
// of M bytes", "read PATH: why". A file that shrinks while read gives the
// bytes that were there.
Status ReadFileBounded(const std::string& path, size_t max_bytes, std::string* out);

}  // namespace tw
