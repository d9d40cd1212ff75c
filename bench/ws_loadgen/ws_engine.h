// The WebSocket load generator's event loop: many non-blocking client
// WebSocket connections to one loopback port (`GET /v1/ws`), driven by epoll.
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
// what the resume storm does. Connects are admitted at most `max_connecting`
// at a time so a burst of a thousand never overflows the listen backlog.
//
// Thread: one thread owns a WsEngine and everything attached to it; handlers
// run inside Run(). Allocation: per open connection one WsConn (its reader
// holds at most `max_message_bytes` of a message, its head buffer at most
// `max_head_bytes`); one shared read buffer of `read_buffer_bytes`. Never
// blocks except in epoll_wait; never retries a failed connect by itself; a
// closed WsConn is freed only after the epoll batch, never inside a callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
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

class WsConn {
 public:
  WsHandler* handler() const { return handler_; }
  uint64_t tag() const { return tag_; }
  double opened_us() const { return opened_us_; }  // connect() began; 0 while queued
  uint64_t wire_bytes_read() const { return wire_bytes_; }

 private:
  friend class WsEngine;
  class Sink;
  enum class Phase { kQueued, kConnecting, kHandshake, kOpen, kClosed };
  explicit WsConn(const ws::ReaderLimits& limits) : reader_(limits) {}
  int fd_ = -1;
  Phase phase_ = Phase::kQueued;
  WsHandler* handler_ = nullptr;
  uint64_t tag_ = 0;
  std::string key_;        // Sec-WebSocket-Key sent
  std::string head_;       // response head so far
  std::string out_;        // bytes not yet written
  size_t out_off_ = 0;
  double opened_us_ = 0;
  uint64_t wire_bytes_ = 0;
  ws::MessageReader reader_;
};

class WsEngine {
 public:
  explicit WsEngine(uint16_t port, WsEngineOptions options = {});
  ~WsEngine();
  WsEngine(const WsEngine&) = delete;
  WsEngine& operator=(const WsEngine&) = delete;

  Status Init();

  // Queues a connection to `path`. The WsConn stays valid until it is closed
  // (by the handler, or after OnEnd).
  WsConn* Open(const std::string& path, WsHandler* handler, uint64_t tag);
  // A masked text frame (only once open; false otherwise or if the send failed).
  bool SendText(WsConn* c, std::string_view message);
  // Closes now, without a close frame: RST (SO_LINGER 0) when `reset`, else
  // FIN. No OnEnd follows.
  void Close(WsConn* c, bool reset);

  // Runs `fn` at NowUs() >= at_us (from inside Run).
  void At(double at_us, std::function<void()> fn);

  // Runs until `done()` is true or `deadline_us` passes; `tick` runs about
  // every `tick_ms` (the progress line). Returns false on the deadline.
  bool Run(const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick,
           int tick_ms = 1000);

  size_t open_count() const { return conns_.size(); }
  size_t connect_failures() const { return connect_failures_; }

 private:
  friend class WsConn;  // its reader's callbacks (WsConn::Sink) answer pings and closes
  void StartQueued();
  void StartConnect(WsConn* c);
  void OnEvents(WsConn* c, uint32_t events);
  void Queue(WsConn* c, const std::string& bytes);  // append and flush
  void Flush(WsConn* c);
  void ReadSome(WsConn* c);
  bool ParseHead(WsConn* c, std::string_view* rest);  // false: ended (OnEnd done)
  void Frames(WsConn* c, std::string_view bytes);
  void Finish(WsConn* c, const Status& why);  // OnEnd, then close
  void Release(WsConn* c, bool reset);
  void UpdateInterest(WsConn* c);
  void Mask(uint8_t key[4]);

  uint16_t port_;
  WsEngineOptions options_;
  int epfd_ = -1;
  std::vector<char> buf_;
  std::mt19937_64 rng_;
  std::unordered_map<WsConn*, std::unique_ptr<WsConn>> conns_;
  std::queue<WsConn*> queued_;
  size_t connecting_ = 0;
  size_t connect_failures_ = 0;
  std::vector<std::unique_ptr<WsConn>> graveyard_;  // freed after each epoll batch
  bench::EventLoop loop_;
};

}  // namespace tw::ws_loadgen
