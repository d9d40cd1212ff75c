// The load generator's event loop: many non-blocking client connections to
// one loopback port, one HTTP exchange per connection, driven by epoll.
//
// A Conn is one TCP connection carrying one request; the response head and
// the de-chunked body go to the Conn's Handler as they arrive (through
// tw::client::ResponseParser), and the Handler decides what happens next:
// keep reading, stop reading (the socket's EPOLLIN is dropped, so the kernel
// buffers fill and the server meets backpressure), or close with a FIN or an
// RST. Connects are admitted at most `max_connecting` at a time so that a
// burst of thousands never overflows the server's listen backlog.
//
// A Conn may also carry several pipelined requests written back to back
// (ConnOptions::responses): their responses are parsed one after another on
// the same connection, each announced to the handler by OnResponseDone. And
// a Conn may be opened without reading (ConnOptions::reading = false), or
// with its own SO_RCVBUF, for clients that read slowly or never.
//
// Thread: one thread owns an Engine and everything attached to it; handlers
// run inside Run(). Allocation: one Conn (with its parser) per open
// connection; one shared read buffer of `read_buffer_bytes`. Never blocks
// except in epoll_wait; never retries a failed connect by itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/response_parser.h"
#include "common/status.h"
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

struct EngineOptions {
  size_t max_connecting = 256;        // connects in flight at once
  size_t read_buffer_bytes = 65536;   // one read() at most
  int rcvbuf_bytes = 0;               // > 0: SO_RCVBUF before connect
};

// Per-connection choices (Engine::Open).
struct ConnOptions {
  int rcvbuf_bytes = 0;  // > 0: this connection's SO_RCVBUF before connect (else EngineOptions')
  int responses = 1;     // pipelined requests in the request bytes: responses read before the exchange ends
  bool reading = true;   // false: the request is written, nothing is ever read (until ResumeReading)
};

class Conn {
 public:
  Handler* handler() const { return handler_; }
  uint64_t tag() const { return tag_; }       // caller's label (stream index)
  double opened_us() const { return opened_us_; }
  double sent_us() const { return sent_us_; }  // request fully written; 0 before
  uint64_t wire_bytes_read() const { return wire_bytes_; }
  const client::ResponseParser& parser() const { return parser_; }
  bool open() const { return fd_ >= 0; }

 private:
  friend class Engine;
  enum class Phase { kQueued, kConnecting, kWriting, kReading, kClosed };
  int fd_ = -1;
  Phase phase_ = Phase::kQueued;
  Handler* handler_ = nullptr;
  uint64_t tag_ = 0;
  std::string out_;        // request bytes not yet written
  size_t out_off_ = 0;
  bool reading_ = true;    // EPOLLIN wanted
  int rcvbuf_bytes_ = 0;   // SO_RCVBUF before connect (0: the engine's)
  int responses_ = 1;      // responses expected on this connection
  int responses_done_ = 0;
  double opened_us_ = 0;
  double sent_us_ = 0;
  uint64_t wire_bytes_ = 0;
  client::ResponseParser parser_;
};

class Engine {
 public:
  explicit Engine(uint16_t port, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Status Init();

  // Queues a connection that will send `request` (raw HTTP bytes). The Conn
  // stays valid until it is closed (by the handler, or after OnEnd).
  Conn* Open(std::string request, Handler* handler, uint64_t tag, ConnOptions options = {});
  // Closes now: RST (SO_LINGER 0) when `reset`, else FIN. No OnEnd follows.
  void Close(Conn* c, bool reset);
  // Stops reading: the kernel's receive buffer fills and the server's writes
  // back up. The connection stays open.
  void StopReading(Conn* c);
  // Reads again after StopReading (or ConnOptions::reading = false). With
  // `widen`, the receive buffer and window are widened first
  // (client::WidenReceiveWindow): a reader that had a tiny SO_RCVBUF would
  // otherwise get a few KB per 200 ms persist probe.
  void ResumeReading(Conn* c, bool widen = false);

  // Runs `fn` at NowUs() >= at_us (from inside Run).
  void At(double at_us, std::function<void()> fn);

  // Runs until `done()` is true or `deadline_us` passes; `tick` runs about
  // every `tick_ms` (the progress line). Returns false on the deadline.
  bool Run(const std::function<bool()>& done, double deadline_us,
           const std::function<void()>& tick, int tick_ms = 500);

  size_t open_count() const { return conns_.size(); }
  size_t connect_failures() const { return connect_failures_; }

 private:
  void StartQueued();
  void StartConnect(Conn* c);
  void OnEvents(Conn* c, uint32_t events);
  void Flush(Conn* c);
  void ReadSome(Conn* c);
  void Finish(Conn* c, bool complete, const Status& why);  // OnEnd, then close
  void Release(Conn* c, bool reset);
  void UpdateInterest(Conn* c);

  uint16_t port_;
  EngineOptions options_;
  int epfd_ = -1;
  std::vector<char> buf_;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  std::queue<Conn*> queued_;
  size_t connecting_ = 0;
  size_t connect_failures_ = 0;
  std::vector<std::unique_ptr<Conn>> graveyard_;  // freed after each epoll batch
  bench::EventLoop loop_;
};

}  // namespace tw::loadgen
