// Response bytes: status lines, response heads, chunk framing and the JSON
// error envelope of DESIGN.md §4. Pure functions, no I/O.
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

namespace tw::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// An extra member of the error object; raw_json is emitted as-is (the caller
// passes valid JSON text: a number, "\"quoted\"", an object…).
struct JsonField {
  std::string name;
  std::string raw_json;
};
using JsonFields = std::vector<JsonField>;

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
};

// Status line + headers + the blank line.
std::string BuildResponseHead(const ResponseHead& head);

// {"error":{"type":…,"message":…,"retryable":…[,extra…]}}
std::string ErrorEnvelope(std::string_view type, std::string_view message, bool retryable,
                          const JsonFields& extra = {});

// Appends s as a JSON string literal (with quotes), escaping per RFC 8259.
void AppendJsonString(std::string* out, std::string_view s);

// The error type of DESIGN.md §4 for a protocol-level status (400 → invalid_request …).
std::string_view ErrorTypeForStatus(int status);

// Chunk-size line for a chunk of n bytes ("1a\r\n"), written into buf (>= 20
// bytes); returns its length.
size_t FormatChunkHeader(size_t n, char* buf);
inline constexpr std::string_view kChunkTrailer = "\r\n";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
inline constexpr std::string_view kContinueLine = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace tw::http
