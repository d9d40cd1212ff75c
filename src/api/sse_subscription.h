// SseSubscription: one SSE response attached to a stream (DESIGN.md §5).
//
// The transport side of stream::Subscription for text/event-stream. It starts
// the HTTP response lazily, on the first event it is offered, so a resume that
// the hub refuses (409) can still be answered with an ordinary JSON error.
// Every stream event goes out as `id: N / event: type / data: {...}`; a
// subscriber-level ending (slow_client, shutting_down) as an `event: error`
// without an id, carrying resume_from. A comment heartbeat (": ping") goes out
// every heartbeat_ms while nothing else was written.
//
// Backpressure: an event is offered to the socket only if it fits in the
// connection's output bound minus `reserve_bytes`, kept free so the final
// error event and the last chunk always fit; otherwise Deliver() says kNoRoom
// and the hub's policy decides.
//
// Threads: I/O thread only. Ownership: the App keeps each subscription alive
// until it has ended (Complete/End/peer close) and frees it after the current
// loop iteration.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "http/server.h"
#include "net/event_loop.h"
#include "stream/hub.h"

namespace tw::api {

class SseSubscription : public stream::Subscription,
                        public std::enable_shared_from_this<SseSubscription> {
 public:
  struct Options {
    int64_t heartbeat_ms = 15000;
    size_t reserve_bytes = 1024;
    std::string stream_id;
    http::Headers extra_headers;  // e.g. CORS
  };
  // `on_done` runs once when this subscription has ended for any reason.
  SseSubscription(net::EventLoop* loop, stream::StreamHub* hub, http::Responder responder,
                  Options options, std::function<void(SseSubscription*)> on_done);
  ~SseSubscription() override;

  stream::DeliverResult Deliver(const stream::Event& event) override;
  void Complete() override;
  void End(const stream::SubscriberEnd& end) override;

  // Starts the HTTP response now (normally done by the first Deliver).
  void Start() { EnsureStarted(); }
  bool started() const { return writer_ != nullptr; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  bool EnsureStarted();
  void Heartbeat();
  void Done();

  net::EventLoop* loop_;
  stream::StreamHub* hub_;
  http::Responder responder_;
  Options options_;
  std::function<void(SseSubscription*)> on_done_;
  std::shared_ptr<http::StreamWriter> writer_;
  uint64_t heartbeat_timer_ = 0;
  bool wrote_since_heartbeat_ = false;
  bool done_ = false;
  uint64_t bytes_written_ = 0;
  std::string scratch_;
};

}  // namespace tw::api
