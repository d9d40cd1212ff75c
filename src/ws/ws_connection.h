// WsConnection: the WebSocket protocol (RFC 6455) on one net::Connection after
// the HTTP upgrade: frames in through MessageReader, messages out through the
// frame writer, the close handshake, ping/pong, and the server's heartbeat.
//
// What it does for the endpoint on top (WsEndpoint: the echo lab endpoint,
// the /v1/ws session):
//   - complete text/binary messages (text already UTF-8-checked) go to
//     WsEndpoint::OnMessage; pings are answered with pongs at once;
//   - a protocol error (1002), invalid UTF-8 (1007) or an over-long message
//     (1009) fails the connection: a close frame with that code, then the
//     server closes TCP after flushing;
//   - a peer's close frame is echoed with its code (1000 if it had none) and
//     the server closes TCP; after the server sent close (Close()), it waits
//     up to close_timeout_ms for the peer's close, then closes TCP;
//   - heartbeat: a ping every heartbeat_ms; a pong (any pong) must arrive
//     within pong_timeout_ms of it, else the connection is closed (close 1001
//     "pong timeout", TCP closed at once: the peer is not answering).
//
// Output: data messages go through Send(), bounded by the connection's
// max_output_bytes (WriteResult kRefused beyond it: the endpoint's policy
// decides); control frames (<= 127 bytes) are always written.
// Input: the reader holds at most max_message_bytes of message plus 140
// bytes of header/control payload. Reading stops while the output is over
// the connection's max_output_bytes (pongs, error replies: a client that
// sends and never reads) and resumes when it drains; the kernel's buffer
// holds the rest and TCP flow control pushes back on the client.
//
// Threads: the loop thread only. Ownership: the HTTP server owns it (through
// the upgraded connection) and frees it after OnClosed, at the end of the
// loop iteration. It owns its endpoint. Never: blocks, throws, frees itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "net/connection.h"
#include "net/event_loop.h"
#include "ws/frame.h"

namespace tw::ws {

struct WsOptions {
  size_t max_message_bytes = 1 << 20;  // incoming message bound (1009 beyond)
  int64_t heartbeat_ms = 15000;        // server ping period (0: none)
  int64_t pong_timeout_ms = 10000;     // a ping's pong must come within this
  int64_t close_timeout_ms = 2000;     // after our close: wait this for the peer's
};

class WsConnection;

// The application on top of one WebSocket connection.
class WsEndpoint {
 public:
  virtual ~WsEndpoint() = default;
  // The connection is open (101 sent). Called once, before any message.
  virtual void OnOpen(WsConnection* ws) = 0;
  virtual void OnMessage(Opcode opcode, std::string_view payload) = 0;
  // Buffered output fell to the low watermark after a refused/queued send.
  virtual void OnWritable() = 0;
  // The connection is gone (after the close handshake, a failure or a reset);
  // `code` is the close code sent or received (1006 if none). Called once;
  // no Send() after it.
  virtual void OnClosed(uint16_t code) = 0;
};

class WsConnection : public net::ConnectionHandler, public MessageHandler {
 public:
  WsConnection(net::EventLoop* loop, net::Connection* conn, const WsOptions& options,
               std::unique_ptr<WsEndpoint> endpoint);
  ~WsConnection() override;

  // Opens: OnOpen and the heartbeat; `leftover` (bytes the HTTP reader had
  // read past the upgrade request) is processed in the next loop iteration,
  // or before any newer input, whichever comes first.
  void Start(std::string leftover);

  // One unfragmented message. kRefused: over the output bound, nothing sent.
  net::WriteResult Send(Opcode opcode, std::string_view payload);
  net::WriteResult SendText(std::string_view payload) { return Send(Opcode::kText, payload); }
  // Same, never refused (for messages the caller must not lose, bounded by
  // whoever built them: the final error of a stream).
  net::WriteResult SendUnbounded(Opcode opcode, std::string_view payload);
  // Starts the close handshake (no-op if closing already).
  void Close(uint16_t code, std::string_view reason);
  // Server shutdown: Close(1001, "server shutting down").
  void Shutdown() { Close(close_code::kGoingAway, "server shutting down"); }
  // Pauses or resumes reading messages (backpressure from the endpoint).
  void SetReading(bool on);

  bool open() const { return !close_sent_ && !closed_; }
  size_t buffered_bytes() const { return conn_->buffered_bytes(); }
  size_t max_output_bytes() const { return conn_->limits().max_output_bytes; }
  WsEndpoint* endpoint() { return endpoint_.get(); }

  // net::ConnectionHandler
  void OnData(const char* data, size_t len) override;
  void OnDrained() override;
  void OnClosed() override;
  void OnShutdown() override { Shutdown(); }  // the server is shutting down

  // MessageHandler (from the reader)
  bool OnMessage(Opcode opcode, std::string_view payload) override;
  bool OnPing(std::string_view payload) override;
  bool OnPong(std::string_view payload) override;
  bool OnClose(uint16_t code, std::string_view reason) override;

 private:
  void Feed(const char* data, size_t len);
  void FeedPending();  // the leftover from the upgrade, if not fed yet
  void Fail();  // the reader failed: close frame with its code, then close TCP
  void WriteControl(Opcode opcode, std::string_view payload);
  void Heartbeat();
  void StopTimers();

  net::EventLoop* loop_;
  net::Connection* conn_;  // owned by the HTTP server's connection
  WsOptions options_;
  std::unique_ptr<WsEndpoint> endpoint_;
  MessageReader reader_;
  std::string scratch_;
  std::string pending_;  // upgrade leftover not fed yet
  bool close_sent_ = false;
  bool closed_ = false;
  uint16_t close_code_ = close_code::kAbnormal;
  bool ping_outstanding_ = false;
  bool input_paused_ = false;  // reading stopped: output over max_output_bytes (OnData)
  net::EventLoop::TimerId heartbeat_timer_ = 0;
  net::EventLoop::TimerId pong_timer_ = 0;
  net::EventLoop::TimerId close_timer_ = 0;
  net::EventLoop::TimerId start_timer_ = 0;
};

}  // namespace tw::ws
