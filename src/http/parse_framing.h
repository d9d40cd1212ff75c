// Message semantics of a parsed request head (RFC 9112 §3, §6, §9; RFC 9110
// §7.2, §7.6.1, §7.8, §10.1.1): target form, Host, message body framing
// (Content-Length / Transfer-Encoding), persistence, Expect and Upgrade.
//
// Pure functions over views into the caller's buffer: any thread, never
// allocate, never fail except through *failure.
//
// Decisions where the RFCs leave a choice (documented in
// tests/data/http/DEVIATIONS.md as well):
//   - Content-Length: more than one field line is 400 even if the values
//     agree; a list value ("5, 5") is 400; leading zeros are fine; a value
//     over 2^64-1 is 400; over max_body_bytes is 413.
//   - Transfer-Encoding (all field lines joined as one list): exactly one
//     "chunked", last, without parameters -> chunked. Empty list, bad grammar,
//     "chunked" twice, "chunked" not last, parameters on chunked, or a final
//     coding other than chunked -> 400 (§6.3: the length cannot be known).
//     A well-formed list of other codings ending in chunked -> 501 (§6.1: we
//     implement no other transfer coding). In HTTP/1.0 any TE -> 400.
//   - Host: exactly one line for HTTP/1.1, at most one for 1.0, value must be
//     uri-host [ ":" port ] characters (empty allowed, §3.2).
//   - Upgrade is honoured only in HTTP/1.1 with "upgrade" among the
//     Connection options (RFC 9110 §7.8); CONNECT always hands off and carries
//     no body (RFC 9110 §9.3.6), so its framing headers are not applied.
//   - Expect: 100-continue is honoured only in HTTP/1.1 (RFC 9110 §10.1.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/request_reader.h"

namespace tw::http {

enum class TargetForm { kOrigin, kAbsolute, kAuthority, kAsterisk, kInvalid };

// Form of `target` (RFC 9112 §3.2): origin-form ("/..."), absolute-form
// (scheme ":" ...), authority-form (host ":" port, CONNECT only; CONNECT
// accepts nothing else), asterisk-form ("*", OPTIONS only). Bytes are assumed
// to be VCHAR already (ParseRequestHead checks that).
TargetForm ClassifyTarget(std::string_view method, std::string_view target);

// Splits a target into path and query: the path is the part before '?' or
// '#' (for absolute-form, after scheme and authority; "/" if empty; for
// authority- and asterisk-form the target itself), the query the part after
// '?' up to '#'. A fragment is dropped.
void SplitTarget(std::string_view method, std::string_view target, std::string_view* path,
                 std::string_view* query);

struct MessageFraming {
  enum class Body { kNone, kLength, kChunked };
  Body body = Body::kNone;
  uint64_t content_length = 0;   // when body == kLength
  bool keep_alive = true;
  bool expect_continue = false;  // HTTP/1.1 "Expect: 100-continue"
  bool upgrade = false;          // Upgrade hand-off or CONNECT
};

// Applies the rules above to a head parsed by ParseRequestHead. `base` is the
// buffer the head's views point into (for failure offsets); `require_host`
// turns the HTTP/1.1 Host requirement on (the default everywhere but in
// comparisons with llhttp). Returns false with *failure filled (400, 413 or
// 501) if the request must be refused.
bool InterpretHead(const RequestHeadView& head, const char* base, size_t max_body_bytes,
                   bool require_host, MessageFraming* out, ParseFailure* failure);

}  // namespace tw::http
