// HTTP/1.1 response parser for TokenWire's own clients (loopback tests and the
// bench's load generator; never the server), incremental in the
// picohttpparser spirit: bytes in, "how many consumed" out, body bytes
// (de-chunked) handed to a sink as they arrive.
//
// It is a tester of our server, so it is strict where RFC 9112 lets a
// recipient be lenient: every line must end in CRLF (a bare LF is an error),
// no obs-fold, header names are tokens, values hold no control bytes but HTAB,
// Content-Length is digits only and repeated copies must agree, Content-Length
// together with Transfer-Encoding is an error, and the only transfer coding is
// "chunked" (hex size, optional extensions, CRLF after the data, trailers).
// Body framing follows RFC 9112 §6.3: none for HEAD, 1xx, 204 and 304; then
// chunked, Content-Length, or until the connection closes. Interim 1xx
// responses other than 101 are skipped.
//
// Bounds (ResponseLimits): head bytes, header count, one chunk-size or trailer
// line. Passing one is an error Status naming it and the byte offset within
// the response. The body itself is not held here, so it is not bounded here.
//
// Allocation: the head is accumulated in one string (up to max_head_bytes) and
// split into owned header strings once; body bytes are never copied (the sink
// sees views into the caller's input). Thread-safety: one parser per
// connection, one thread at a time; the sink runs inside Feed().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tw::client {

struct ResponseLimits {
  size_t max_head_bytes = 64 * 1024;  // status line + headers + blank line
  size_t max_headers = 100;           // header fields in one head
  size_t max_chunk_line_bytes = 4096; // one chunk-size line or trailer line
};

struct ResponseHead {
  int minor_version = 1;  // HTTP/1.<minor>
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as sent

  // First header with this name (ASCII case-insensitive), or nullptr.
  const std::string* Find(std::string_view name) const;
};

enum class BodyFraming { kNone, kContentLength, kChunked, kUntilClose };

class ResponseParser {
 public:
  // Receives body bytes; return false to make Feed() stop right after them.
  using BodySink = std::function<bool(std::string_view)>;

  explicit ResponseParser(ResponseLimits limits = {});

  // Ready for the next response on the connection. `request_was_head`: the
  // request was HEAD, so the response has no body whatever its headers say.
  void Reset(bool request_was_head = false);
  void set_body_sink(BodySink sink) { sink_ = std::move(sink); }

  // Consumes a prefix of `in` into *consumed. Feed stops early (with OK) right
  // after the head, so the caller can look at it before any body byte goes to
  // the sink; after the response's last byte (what follows belongs to the next
  // response); and after a sink call that returned false. Call again with the
  // rest. After an error the parser stays failed until Reset().
  Status Feed(std::string_view in, size_t* consumed);

  // The peer closed the connection. Completes a body delimited by close; any
  // other unfinished response is an error naming where it stopped.
  Status FeedEof();

  bool head_done() const { return state_ != State::kHead; }
  bool done() const { return state_ == State::kDone; }
  const ResponseHead& head() const { return head_; }
  BodyFraming framing() const { return framing_; }
  // The response's Content-Length (meaningful for kContentLength).
  uint64_t content_length() const { return content_length_; }
  // De-chunked body bytes handed to the sink so far.
  uint64_t body_bytes() const { return body_bytes_; }
  // Whether the connection can carry another request after this response.
  bool keep_alive() const;

 private:
  enum class State {
    kHead,
    kLengthBody,
    kChunkSize,      // hex digits, then optional ";ext", then CRLF
    kChunkData,
    kChunkDataCr,    // the CR after chunk data
    kChunkDataLf,
    kTrailer,        // trailer lines until an empty one
    kUntilClose,
    kDone,
    kError,
  };

  Status Fail(std::string what);
  Status ParseHead(std::string_view head);  // without the final CRLFCRLF
  Status ChooseFraming();
  Status ParseChunkSizeLine(std::string_view line);
  bool Deliver(std::string_view bytes);     // returns the sink's verdict

  ResponseLimits limits_;
  BodySink sink_;
  bool request_was_head_ = false;
  State state_ = State::kHead;
  Status error_;
  ResponseHead head_;
  BodyFraming framing_ = BodyFraming::kNone;
  bool connection_close_ = false;
  std::string line_;           // head bytes so far, or one chunk/trailer line
  bool prev_cr_ = false;       // the previous line byte was CR
  uint64_t offset_ = 0;        // bytes of this response consumed so far
  uint64_t content_length_ = 0;
  uint64_t remaining_ = 0;     // of the Content-Length body or of the chunk
  uint64_t body_bytes_ = 0;
};

}  // namespace tw::client
