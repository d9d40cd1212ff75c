// SseSubscription: one text/event-stream response attached to a stream
// (DESIGN.md §5).
//
// The transport side of stream::Subscription for every HTTP event stream we
// serve. This class owns the plumbing those responses share: it starts the
// chunked `200 text/event-stream` response (Cache-Control: no-cache,
// X-Accel-Buffering: no, X-Stream-Id) on Start() or the first event it is
// offered, wires the writer's writable/close callbacks into the hub, writes a
// comment heartbeat (": ping") every heartbeat_ms while nothing else was
// written, keeps the output bound, and reports its end once (on_done).
//
// How an event becomes bytes is an SseFormat's, the one thing the transports
// differ in:
//   TokenWireSseFormat (here; the default)  `retry:` first, then every stream
//       event as `id: N / event: type / data: {...}` (sse/event_json.h); a
//       subscriber-level ending (slow_client, shutting_down) as an
//       `event: error` without an id, carrying resume_from. Its bytes are the
//       same for every subscriber of a stream: with several subscribers they
//       are written once per event (stream::Event::wire) and copied for the
//       others; a lone subscriber's go straight into its batch.
//   OpenAiSseFormat (api/openai_response.h)  OpenAI's `data: {chunk}` lines
//       ending with `data: [DONE]`; the response of n choices is fed by
//       n streams through api::OpenAiChoices.
//
// Batching: the events the hub offers in one service are gathered and leave
// as one chunk at EndBatch (the connection then sends the iteration's
// chunks together). Backpressure: an event is taken only if the connection's
// output, this batch and the event fit in the output bound minus
// `reserve_bytes`, kept free so the last bytes of the response (the format's
// kLast event, an early ending) and the last chunk always fit; otherwise
// Deliver() says kNoRoom and the hub's policy decides. A client that closes
// is detached from the hub (linger starts).
//
// Threads: I/O thread only. Memory: the format, a scratch buffer and the
// batch, each at most the output bound. Never blocks; never writes past the connection's output bound.
// Ownership: the App keeps each subscription alive until on_done has run and
// frees it after the current loop iteration.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "http/server.h"
#include "net/event_loop.h"
#include "stream/hub.h"

namespace tw::sse {

// How the events of one response become text/event-stream bytes. One
// instance per response (it may keep state across events). I/O thread only.
class SseFormat {
 public:
  // What AppendEvent produced.
  enum class Bytes {
    kNone,   // nothing to send for this event; it counts as taken
    kEvent,  // bytes sent only if they leave reserve_bytes free
    kLast,   // the response's last bytes: they may use the reserve, and once
             // they are taken no further event is sent
  };

  virtual ~SseFormat() = default;
  // Appends the bytes written once, when the response starts.
  virtual void AppendPreamble(std::string* out) = 0;
  // Appends the bytes for one stream event.
  virtual Bytes AppendEvent(const stream::Event& event, std::string* out) = 0;
  // Whether an event's bytes should be cached for the stream's other
  // subscribers (stream::Subscription::stream_shared), for formats whose
  // bytes are the same for every subscriber.
  void SetShared(bool shared) { shared_ = shared; }
  // Appends the bytes that end the response early (a subscriber-level
  // ending, DESIGN.md §5), after the 200.
  virtual void AppendEnding(const ApiError& end, std::string* out) = 0;

 protected:
  bool shared_ = false;
};

// Ours (DESIGN.md §5): `retry: 1000`, then `id: N / event: type / data: {...}`
// per event; an ending is `event: error` with {"type","message","retryable",
// "resume_from"} and no id.
class TokenWireSseFormat : public SseFormat {
 public:
  // The start event names the stream and the model.
  TokenWireSseFormat(std::string stream_id, std::string model)
      : stream_id_(std::move(stream_id)), model_(std::move(model)) {}
  void AppendPreamble(std::string* out) override;
  Bytes AppendEvent(const stream::Event& event, std::string* out) override;
  void AppendEnding(const ApiError& end, std::string* out) override;

 private:
  std::string stream_id_;
  std::string model_;
  std::string data_;  // scratch: one event's data object
};

class SseSubscription : public stream::Subscription,
                        public std::enable_shared_from_this<SseSubscription> {
 public:
  struct Options {
    int64_t heartbeat_ms = 15000;
    size_t reserve_bytes = 1024;
    std::string stream_id;
    // When the socket can take more: by default the hub offers this
    // subscription's events again; a response fed by several streams
    // (api::OpenAiChoices) offers each of its own.
    std::function<void()> on_writable;
  };
  // `on_done` runs once when this subscription has ended for any reason.
  // `format` turns events into bytes (never null).
  SseSubscription(net::EventLoop* loop, stream::StreamHub* hub, http::Responder responder,
                  Options options, std::unique_ptr<SseFormat> format,
                  std::function<void(SseSubscription*)> on_done);
  ~SseSubscription() override;

  stream::DeliverResult Deliver(const stream::Event& event) override;
  void EndBatch() override;
  void Complete() override;
  void End(const ApiError& end) override;

  // Starts the HTTP response now (normally done by the first Deliver).
  void Start() { EnsureStarted(); }
  bool started() const { return writer_ != nullptr; }
  // The preamble and the events taken so far (not heartbeats or an ending).

 private:
  bool EnsureStarted();
  void Heartbeat();
  void Done();

  net::EventLoop* loop_;
  stream::StreamHub* hub_;
  http::Responder responder_;
  Options options_;
  std::unique_ptr<SseFormat> format_;
  std::function<void(SseSubscription*)> on_done_;
  std::shared_ptr<http::StreamWriter> writer_;
  uint64_t heartbeat_timer_ = 0;
  bool wrote_since_heartbeat_ = false;
  bool last_written_ = false;  // the format's kLast bytes were taken
  bool done_ = false;
  std::string scratch_;  // heartbeats, endings, the preamble
  std::string batch_;    // events taken since the last EndBatch
};

}  // namespace tw::sse
