// Request ids (X-Request-Id): every response names the request it answers,
// and the access record and the stream records of that request carry the
// same id, so a client's report can be found in the server's log.
//
// A client's X-Request-Id is kept when it is valid: 1..kMaxRequestIdBytes
// bytes, each visible ASCII (0x21..0x7E: no space, no control byte, no
// UTF-8). Otherwise (absent, empty, too long, other bytes) the server makes
// one: it is replaced, never refused, since the id is a convenience and a
// request should not fail for it.
//
// A server id is "<16 hex digits>-<counter in hex>": the prefix is random
// per process (getrandom), the counter counts the ids this process made,
// so ids never repeat within a process and two processes' ids differ with
// overwhelming probability.
//
// Threads: any (the counter is atomic). Allocates only the returned string.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tw::http {

inline constexpr size_t kMaxRequestIdBytes = 128;

bool ValidRequestId(std::string_view id);
// A new id, as above.
std::string NewRequestId();
// The client's id when valid, else a new one.
std::string RequestIdFor(std::string_view client_id);

}  // namespace tw::http
