// The load generator's HTTP/SSE engine: many client connections to one
// loopback port, one HTTP exchange per connection (or several pipelined),
// on the shared client loop (bench/lib/client_loop.h: admission, epoll,
// writes, FIN/RST, timers). This file is the HTTP transport on that loop.
//
// A Conn is one TCP connection carrying one request; the response head and
// the de-chunked body go to the Conn's Handler as they arrive (through
// tw::client::ResponseParser), and the Handler decides what happens next:
// keep reading, stop reading (the socket's EPOLLIN is dropped, so the kernel
// buffers fill and the server meets backpressure), or close with a FIN or an
// RST. A Conn leaves the loop's connect window (`max_connecting`) as soon as
// TCP connects; it reads only once its whole request has gone out.
//
// A Conn may also carry several pipelined requests written back to back
// (ConnOptions::responses): their responses are parsed one after another on
// the same connection, each announced to the handler by OnResponseDone. And
// a Conn may be opened without reading (ConnOptions::reading = false), or
// with its own SO_RCVBUF, for clients that read slowly or never.
//
// Thread: one thread owns an Engine and everything attached to it; handlers
// run inside Run(). Allocation: one Conn (with its parser) per open
// connection; the loop's one read buffer of `read_buffer_bytes`. Never
// blocks except in epoll_wait; never retries a failed connect by itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "client/response_parser.h"
#include "common/status.h"
#include "lib/client_loop.h"
#include "lib/event_loop.h"

namespace tw::loadgen {

// Microseconds on the monotonic clock since the first call.
using bench::NowUs;

class Conn;

class Handler {
 public:
  virtual ~Handler() = default;
  virtual void OnHead(Conn* c, const client::ResponseHead& head) = 0;
  // Body bytes (de-chunked). The handler may call Engine::Close or
  // Engine::StopReading on `c` from here.
  virtual void OnBody(Conn* c, std::string_view bytes) = 0;
  // The exchange is over: `complete` when the whole response arrived; else
  // `why` says what ended it (EOF, reset, parse error, connect failure). Not
  // called after the handler closed the connection itself.
  virtual void OnEnd(Conn* c, bool complete, const Status& why) = 0;
  // One whole response arrived (every response of a pipelined Conn, the
  // last one too, before its OnEnd); the next one's OnHead follows.
  virtual void OnResponseDone(Conn*) {}
};

// max_connecting (connects in flight at once), read_buffer_bytes (one
// recv() at most), rcvbuf_bytes (> 0: SO_RCVBUF before connect).
using EngineOptions = bench::ClientLoopOptions;

// Per-connection choices (Engine::Open).
struct ConnOptions {
  int rcvbuf_bytes = 0;  // > 0: this connection's SO_RCVBUF before connect (else EngineOptions')
  int responses = 1;     // pipelined requests in the request bytes: responses read before the exchange ends
  bool reading = true;   // false: the request is written, nothing is ever read (until ResumeReading)
};

// tag(), opened_us(), wire_bytes_read(), open(): bench::ClientSocket's.
class Conn : public bench::ClientSocket {
 public:
  Handler* handler() const { return handler_; }
  double sent_us() const { return sent_us_; }  // request fully written; 0 before
  const client::ResponseParser& parser() const { return parser_; }

 private:
  friend class Engine;
  Handler* handler_ = nullptr;
  int responses_ = 1;      // responses expected on this connection
  int responses_done_ = 0;
  double sent_us_ = 0;
  client::ResponseParser parser_;
};

class Engine : private bench::ClientLoop::Transport {
 public:
  explicit Engine(uint16_t port, EngineOptions options = {});
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Status Init() { return loop_.Init(); }

  // Queues a connection that will send `request` (raw HTTP bytes). The Conn
  // stays valid until it is closed (by the handler, or after OnEnd).
  Conn* Open(std::string request, Handler* handler, uint64_t tag, ConnOptions options = {});
  // Closes now: RST (SO_LINGER 0) when `reset`, else FIN. No OnEnd follows.
  void Close(Conn* c, bool reset) { loop_.Close(c, reset); }
  // Stops reading: the kernel's receive buffer fills and the server's writes
  // back up. The connection stays open.
  void StopReading(Conn* c);
  // Reads again after StopReading (or ConnOptions::reading = false). With
  // `widen`, the receive buffer and window are widened first
  // (client::WidenReceiveWindow): a reader that had a tiny SO_RCVBUF would
  // otherwise get a few KB per 200 ms persist probe.
  void ResumeReading(Conn* c, bool widen = false);

  // Runs `fn` at NowUs() >= at_us (from inside Run).
  void At(double at_us, std::function<void()> fn) { loop_.At(at_us, std::move(fn)); }

  // Runs until `done()` is true or `deadline_us` passes; `tick` runs about
  // every `tick_ms` (the progress line). Returns false on the deadline.
  bool Run(const std::function<bool()>& done, double deadline_us,
           const std::function<void()>& tick, int tick_ms = 500) {
    return loop_.Run(done, deadline_us, tick, tick_ms);
  }

  size_t open_count() const { return loop_.open_count(); }
  size_t connect_failures() const { return loop_.connect_failures(); }

 private:
  // The HTTP transport (bench::ClientLoop::Transport).
  void OnConnected(bench::ClientSocket* s) override;
  void OnWritten(bench::ClientSocket* s) override;
  void OnBytes(bench::ClientSocket* s, std::string_view bytes) override;
  void OnEof(bench::ClientSocket* s) override;
  void OnFailed(bench::ClientSocket* s, const Status& why) override;
  void Finish(Conn* c, bool complete, const Status& why);  // OnEnd, then close

  bench::ClientLoop loop_;
};

}  // namespace tw::loadgen
