// HTTP/1.1 request reading (RFC 9112), incremental and strict.
//
// Two levels, both in the picohttpparser shape (bytes in; complete /
// incomplete / error out):
//   ParseRequestHead()  parses one request line + header section from a
//                       buffer. It never allocates: names and values are views
//                       into the caller's buffer, headers go into a
//                       caller-provided array.
//   RequestReader       owns one connection's input buffer (bounded) and turns
//                       a byte stream into a sequence of complete requests
//                       (head + de-chunked body), in order, for pipelining.
//
// Strictness (each a 400 unless noted): request-line and header grammar (token
// method, exactly one SP between the parts, no whitespace before ':', no bare
// CR, no bare LF anywhere, no control bytes in values, no bytes >= 0x80 or
// controls in the target), target form (origin-form; absolute-form;
// authority-form only for CONNECT; "*" only for OPTIONS), HTTP/1.0 or
// HTTP/1.1 only (another HTTP/d.d is 505), Host required for 1.1 and never
// repeated, Content-Length digits only and never repeated, Content-Length +
// Transfer-Encoding together, Transfer-Encoding in HTTP/1.0, obs-fold, chunk
// sizes that are not hex or would overflow 64 bits, chunk extensions' grammar.
// Transfer-Encoding: exactly "chunked" is decoded; a well-formed list that
// ends in one "chunked" but names other codings first is 501; anything else
// (chunked not last, chunked twice, unknown single coding, bad grammar) is 400
// because the body length cannot be determined (RFC 9112 §6.3).
// Bounds: header section bytes (431), header count (431), body bytes (413:
// Content-Length over the bound as soon as the head is parsed, chunked as
// soon as the declared sizes pass it), chunk-size line bytes (400), trailer
// section bytes and count (431).
// Bare LF: rejected everywhere (RFC 9112 §2.2 only *allows* a recipient to
// accept it; llhttp's strict mode and request-smuggling guidance reject it).
//
// Allocation: a RequestReader holds one input buffer of at most
// buffer_limit_bytes() = max_header_bytes + max_body_bytes +
// max_chunk_line_bytes, the body of the request being assembled (at most
// max_body_bytes) and a header array of max_headers views, allocated once.
// It never throws, never blocks, never touches a socket.
//
// Thread-safety: one RequestReader per connection, used by the I/O thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/parse_chunked.h"

namespace tw::http {

struct HeaderView {
  std::string_view name;
  std::string_view value;  // leading/trailing OWS removed
};

// Result codes of ParseRequestHead.
constexpr int kParseIncomplete = -2;
constexpr int kParseError = -1;

struct RequestHeadView {
  std::string_view method;
  std::string_view target;  // request-target as sent
  int minor_version = 1;    // HTTP/1.<minor>
  HeaderView* headers = nullptr;  // caller's array
  size_t num_headers = 0;
};

struct ParseFailure {
  int status = 400;         // 400, 431, 501, 505
  std::string_view reason;  // static text, e.g. "invalid header name"
  size_t offset = 0;        // byte offset of the problem in the buffer
};

// Parses the request head at buf[0..len). Empty lines (CRLF) before the
// request line are skipped (RFC 9112 §2.2) and counted in the result. Returns
// the number of bytes consumed (> 0, up to and including the blank line),
// kParseIncomplete, or kParseError (with *failure filled). `headers` has room
// for `max_headers` entries; more header lines than that fails with 431.
// Errors are reported at the first offending byte scanning left to right, so
// a prefix of the input is either incomplete or gives the same answer as the
// whole (the property the chunking tests rely on). Only grammar is checked
// here; Host / Content-Length / Transfer-Encoding rules are InterpretHead's
// (parse_framing.h). len above INT_MAX is treated as INT_MAX.
int ParseRequestHead(const char* buf, size_t len, RequestHeadView* out,
                     HeaderView* headers, size_t max_headers, ParseFailure* failure);

struct ReaderLimits {
  size_t max_header_bytes = 16 * 1024;  // request line + headers (also the trailer section)
  size_t max_headers = 100;             // header lines (also trailer lines)
  size_t max_body_bytes = 1 << 20;      // decoded body bytes
  size_t max_chunk_line_bytes = 4096;   // one chunk-size line incl. extensions
  // Policy, not a bound: RFC 9112 §3.2 requires Host in HTTP/1.1 (400 if
  // missing). Turned off only to compare with parsers that do not require it.
  bool require_host = true;
};

// A complete request, owned (strings copied out of the connection buffer once).
struct Request {
  std::string method;
  std::string target;  // as sent
  std::string path;    // target before '?'
  std::string query;   // after '?', without it ("" if none)
  int minor_version = 1;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool keep_alive = true;        // after Connection / version rules
  bool expect_continue = false;  // "Expect: 100-continue" was sent (HTTP/1.1 only)
  // "Connection: upgrade" + "Upgrade" in HTTP/1.1, or a CONNECT request: after
  // this request the reader pauses (see RequestReader::upgrade_pending()).
  bool upgrade = false;

  // First header with this name (case-insensitive), or "" if absent.
  std::string_view Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
  // Value of query parameter `key` (not percent-decoded), or "" if absent.
  std::string_view QueryParam(std::string_view key) const;
};

class RequestReader {
 public:
  enum class Event {
    kNeedMore,      // nothing complete yet; feed more bytes
    kContinue,      // head complete with Expect: 100-continue and a body to
                    // come: the caller may send "100 Continue" now (reported
                    // once, before any kRequest for it; *out holds the head,
                    // body empty). Reported whether or not body bytes have
                    // already arrived, so the event sequence never depends on
                    // how the input was split.
    kRequest,       // *out holds the next complete request
    kError,         // protocol error: answer error_status() and close
  };

  explicit RequestReader(const ReaderLimits& limits = ReaderLimits());

  // Appends received bytes. Returns false (and enters the error state with 413,
  // or 431 while a head is being read) if the unparsed input would exceed
  // buffer_limit_bytes(): call Next() until kNeedMore between Feeds and feed
  // one read at a time. After closed() the bytes are discarded (returns true).
  bool Feed(const char* data, size_t len);
  // Next event. Call repeatedly until kNeedMore: several pipelined requests
  // may be waiting. After kError every call returns kError.
  Event Next(Request* out);

  int error_status() const { return error_status_; }
  // After kError: the head of the request the error belongs to when it was
  // read whole (a body over its bound, a transfer coding refused, a bad
  // chunk), else null (the head itself was bad or too large).
  const Request* failed_head() const { return state_ == State::kError && head_kept_ ? &pending_ : nullptr; }
  const std::string& error_message() const { return error_message_; }
  // True while a request head has started arriving but is not complete (for
  // the header-read deadline).
  bool head_in_progress() const;
  // True while a request has started arriving and is not complete: its head,
  // or its body after a complete head (for the same deadline).
  bool request_in_progress() const;
  // Received bytes not yet consumed by the parser (input buffer only; the body
  // of the request being assembled is not counted).
  size_t buffered_bytes() const;
  // The bound Feed() enforces on buffered_bytes().
  size_t buffer_limit_bytes() const;

  // True after a request with keep_alive == false was returned: the server
  // answers it and closes; later bytes are dropped unparsed.
  bool closed() const;
  // True after a request with upgrade == true was returned and before the
  // next Next(): the bytes after it (tunnel / WebSocket data, or the next
  // HTTP request) are kept unparsed. To switch protocols the server calls
  // TakeBufferedInput() (the reader is closed afterwards) *before* calling
  // Next() again. Calling Next() (or ResumeAfterUpgrade()) means the upgrade
  // was declined: HTTP parsing continues, subject to keep_alive. So a server
  // that ignores Upgrade needs no extra call.
  bool upgrade_pending() const;
  std::string TakeBufferedInput();
  void ResumeAfterUpgrade();

 private:
  enum class State { kHead, kBodyLength, kBodyChunked, kUpgradePending, kClosed, kError };

  Event Fail(int status, std::string message);
  Event ParseHead(Request* out);
  Event FinishRequest(Request* out);
  void Compact();

  ReaderLimits limits_;
  std::string buf_;   // input; bytes before start_ are consumed
  size_t start_ = 0;  // consumed prefix of buf_
  State state_ = State::kHead;
  int error_status_ = 0;
  std::string error_message_;
  uint64_t stream_offset_ = 0;      // stream offset of buf_[0], for messages
  std::vector<HeaderView> header_slots_;  // max_headers entries, reused
  Request pending_;                 // request being assembled (head parsed)
  bool head_kept_ = false;          // pending_ holds a parsed head
  uint64_t body_remaining_ = 0;     // Content-Length bytes still to read
  bool last_keep_alive_ = true;     // keep_alive of the last returned request
  uint64_t body_stream_offset_ = 0; // stream offset where the chunked body began
  ChunkedDecoder chunked_;          // reset per chunked request
};

}  // namespace tw::http
