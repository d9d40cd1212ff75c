// The WebSocket load generator's engine: many client WebSocket connections
// to one loopback port (`GET /v1/ws`), on the shared client loop
// (bench/lib/client_loop.h: admission, epoll, writes, FIN/RST, timers). This
// file is the WebSocket transport on that loop.
//
// A WsConn is one TCP connection: it connects, sends the opening handshake
// with a fresh random Sec-WebSocket-Key, checks the 101 and its
// Sec-WebSocket-Accept (ws::AcceptKey), then reads server frames with
// ws::MessageReader (server frames are unmasked: expect_masked = false) and
// hands each text message to its WsHandler. Client frames are written masked
// (RFC 6455 §5.3) with a fresh 4-byte key each, through ws::AppendFrame's
// mask argument. Pings are answered with pongs here; a server close frame is
// answered with a close frame and ends the connection (OnEnd). The handler
// can drop a connection with a FIN or an RST at any point (Close), which is
// what the resume storm does. A WsConn stays in the loop's connect window
// (`max_connecting`) until its 101 arrives, so a burst of a thousand
// handshakes never overflows the listen backlog.
//
// Thread: one thread owns a WsEngine and everything attached to it; handlers
// run inside Run(). Allocation: per open connection one WsConn (its reader
// holds at most `max_message_bytes` of a message, its head buffer at most
// `max_head_bytes`); the loop's one read buffer of `read_buffer_bytes`. Never
// blocks except in epoll_wait; never retries a failed connect by itself; a
// closed WsConn is freed only after the epoll batch, never inside a callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>

#include "common/status.h"
#include "lib/client_loop.h"
#include "lib/event_loop.h"
#include "ws/frame.h"

namespace tw::ws_loadgen {

// Microseconds on the monotonic clock since the first call.
using bench::NowUs;

class WsConn;

class WsHandler {
 public:
  virtual ~WsHandler() = default;
  // The 101 arrived and was checked: the handler may Send now.
  virtual void OnOpen(WsConn* c) = 0;
  // One complete text message. The handler may Close `c` from here.
  virtual void OnText(WsConn* c, std::string_view message) = 0;
  // The connection ended without the handler closing it: `why` says how
  // (the server's close frame and code, EOF, reset, a refused handshake, a
  // protocol error in the server's frames, a failed connect).
  virtual void OnEnd(WsConn* c, const Status& why) = 0;
};

struct WsEngineOptions {
  size_t max_connecting = 256;         // connects + handshakes in flight at once
  size_t read_buffer_bytes = 65536;    // one recv() at most
  size_t max_head_bytes = 8192;        // the 101 response head
  size_t max_message_bytes = 1 << 20;  // one server message
};

// tag(), opened_us(), wire_bytes_read(), open(): bench::ClientSocket's.
class WsConn : public bench::ClientSocket {
 public:
  WsHandler* handler() const { return handler_; }

 private:
  friend class WsEngine;
  class Sink;
  explicit WsConn(const ws::ReaderLimits& limits) : reader_(limits) {}
  // The 101 arrived and was checked, and the connection is not closed.
  bool upgraded() const { return upgraded_ && !closed(); }
  WsHandler* handler_ = nullptr;
  bool upgraded_ = false;  // the 101 was checked
  std::string key_;        // Sec-WebSocket-Key sent
  std::string head_;       // response head so far
  ws::MessageReader reader_;
};

class WsEngine : private bench::ClientLoop::Transport {
 public:
  explicit WsEngine(uint16_t port, WsEngineOptions options = {});
  WsEngine(const WsEngine&) = delete;
  WsEngine& operator=(const WsEngine&) = delete;

  Status Init() { return loop_.Init(); }

  // Queues a connection to `path`. The WsConn stays valid until it is closed
  // (by the handler, or after OnEnd).
  WsConn* Open(const std::string& path, WsHandler* handler, uint64_t tag);
  // A masked text frame (only once open; false otherwise or if the send failed).
  bool SendText(WsConn* c, std::string_view message);
  // Closes now, without a close frame: RST (SO_LINGER 0) when `reset`, else
  // FIN. No OnEnd follows.
  void Close(WsConn* c, bool reset) { loop_.Close(c, reset); }

  // Runs `fn` at NowUs() >= at_us (from inside Run).
  void At(double at_us, std::function<void()> fn) { loop_.At(at_us, std::move(fn)); }

  // Runs until `done()` is true or `deadline_us` passes; `tick` runs about
  // every `tick_ms` (the progress line). Returns false on the deadline.
  bool Run(const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick,
           int tick_ms = 1000) {
    return loop_.Run(done, deadline_us, tick, tick_ms);
  }

  size_t open_count() const { return loop_.open_count(); }
  size_t connect_failures() const { return loop_.connect_failures(); }

 private:
  friend class WsConn;  // its reader's callbacks (WsConn::Sink) answer pings and closes
  // The WebSocket transport (bench::ClientLoop::Transport).
  void OnConnected(bench::ClientSocket*) override {}  // the handshake goes out; the 101 admits
  void OnBytes(bench::ClientSocket* s, std::string_view bytes) override;
  void OnEof(bench::ClientSocket* s) override;
  void OnFailed(bench::ClientSocket* s, const Status& why) override;
  bool ParseHead(WsConn* c, std::string_view* rest);  // false: ended (OnEnd done)
  void Frames(WsConn* c, std::string_view bytes);
  void Finish(WsConn* c, const Status& why);  // OnEnd, then close
  void Mask(uint8_t key[4]);

  WsEngineOptions options_;
  std::mt19937_64 rng_;
  bench::ClientLoop loop_;
};

}  // namespace tw::ws_loadgen
