// Response bytes: status lines, response heads, chunk framing, and the error
// code for a protocol-level status (the envelope itself is
// json::ErrorEnvelope). Pure functions, no I/O.
//
// Threads: any. Allocates only the returned strings.
// Never: emits a header whose name or value contains CR, LF or NUL (such extra
// headers are dropped, so a handler cannot split a response).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/api_error.h"

namespace tw::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// "Not Found" for 404 …; "Unknown" for codes without a standard phrase.
std::string_view ReasonPhrase(int status);

enum class BodyFraming { kContentLength, kChunked, kUntilClose };

struct ResponseHead {
  int status = 200;
  std::string_view content_type;
  BodyFraming framing = BodyFraming::kContentLength;
  size_t content_length = 0;  // kContentLength only
  bool close = false;         // adds "Connection: close"
  bool keep_alive_http10 = false;  // adds "Connection: keep-alive" (HTTP/1.0 clients)
  const Headers* extra = nullptr;
  // The headers the HTTP layer adds to every response of a request
  // (X-Request-Id, CORS), after `extra`.
  const Headers* edge = nullptr;
};

// Status line + headers + the blank line.
std::string BuildResponseHead(const ResponseHead& head);
// `head` (a whole response head, ending in its blank line) with `extra`
// added before the blank line (dropped like BuildResponseHead's if unsafe).
std::string InsertHeaders(std::string_view head, const Headers& extra);


// Appends s as a JSON string literal (with quotes), escaping per RFC 8259.
void AppendJsonString(std::string* out, std::string_view s);

// The error code of DESIGN.md §4 for a protocol-level status (400 →
// invalid_request …), for the errors the request reader finds.
ErrorCode ErrorCodeForStatus(int status);

// Chunk-size line for a chunk of n bytes ("1a\r\n"), written into buf (>= 20
// bytes); returns its length.
size_t FormatChunkHeader(size_t n, char* buf);
inline constexpr std::string_view kChunkTrailer = "\r\n";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
inline constexpr std::string_view kContinueLine = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace tw::http
