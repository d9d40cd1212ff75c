// A blocking SSE client for loopback tests: one HTTP request (POST with a JSON
// body, or GET with Last-Event-ID) over HttpClient, whose text/event-stream
// response body goes through sse::Parser (src/sse/parser.h) into events.
//
// Reading stops when the response ends, after max_events events, after an
// event for which stop_after returns true, or when the per-event callback
// returns false; a test then closes (FIN or RST) to simulate a client that
// leaves at a chosen point, or keeps the connection open and unread to
// simulate a stalled reader, and may call ReadEvents again to read on. Events
// that arrived in the same read after the stopping one are held back (not in
// result().events) and delivered first by the next ReadEvents, so nothing is
// lost or repeated across a stop.
//
// A response that is not "200 text/event-stream" is read whole into
// error_body (bounded by ClientOptions::max_body_bytes) and is not an error
// Status: the test inspects head.status and the body.
//
// Bounds: the parser's ParserLimits; result.events grows with the events
// read (use the callback and max_events for long streams).
// Thread-safety: one thread per SseClient. Errors: Status, from HttpClient,
// the response parser or the SSE parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/http_client.h"
#include "common/status.h"
#include "sse/parser.h"

namespace tw::client {

struct SseOptions {
  ClientOptions http;
  sse::ParserLimits parser;
  size_t max_events = 0;  // stop once result().events holds this many (0: no limit)
  std::function<bool(const sse::Event&)> stop_after;  // true: stop after this event
  bool close_with_reset = false;  // PostSse/GetSse: close with RST when stopping early
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
};

struct SseResult {
  ResponseHead head;
  std::vector<sse::Event> events;
  std::vector<std::string> comments;  // comment lines (": ping" gives "ping")
  std::string last_event_id;          // id of the last event read (see ReadEvents)
  std::optional<uint64_t> retry_ms;
  std::string error_body;             // body of a response that is not an event stream
  bool ended = false;                 // the server finished the response
  bool stopped = false;               // reading stopped early (max_events, stop_after, callback)
};

class SseClient {
 public:
  // Called per event; return false to stop reading.
  using EventCallback = std::function<bool(const sse::Event&)>;

  explicit SseClient(SseOptions options = {});

  Status Connect(uint16_t port);
  // Sends the request and reads the response head (and, if it is not an
  // event stream, the whole body into result().error_body).
  Status Post(std::string_view target, std::string_view json_body);
  // `last_event_id` empty: no Last-Event-ID header.
  Status Get(std::string_view target, std::string_view last_event_id);

  // True after Post/Get when the answer is 200 with Content-Type
  // text/event-stream.
  bool is_event_stream() const { return is_event_stream_; }

  // Reads events until a stop condition (see the top of this file). May be
  // called again after a stop to read on.
  Status ReadEvents(const EventCallback& on_event = nullptr);

  const SseResult& result() const { return result_; }
  SseResult& mutable_result() { return result_; }
  HttpClient& http() { return http_; }

 private:
  Status Start(const Request& request);
  void OnParsed(const sse::Event& e);
  void Deliver(const sse::Event& e);

  SseOptions options_;
  HttpClient http_;
  sse::Parser parser_;
  SseResult result_;
  bool is_event_stream_ = false;
  std::deque<sse::Event> pending_;  // parsed after a stop, not yet delivered
  bool stopping_ = false;           // a stop condition fired inside this read
  const EventCallback* callback_ = nullptr;
};

// Connect, POST `json_body` to `target`, read events until a stop condition,
// close (RST when options.close_with_reset and reading stopped early).
Status PostSse(uint16_t port, std::string_view target, std::string_view json_body, SseResult* out,
               const SseOptions& options = {});
// The same with GET and an optional Last-Event-ID.
Status GetSse(uint16_t port, std::string_view target, std::string_view last_event_id, SseResult* out,
              const SseOptions& options = {});

}  // namespace tw::client
