// The client machinery the load generators share (bench/loadgen over
// HTTP/SSE, bench/ws_loadgen over WebSocket): many non-blocking TCP
// connections to one loopback port, driven by epoll. What the bytes mean
// belongs to a Transport; this loop owns the rest:
//
//   - admission: connects are started at most `max_connecting` at a time, so
//     a burst of thousands never overflows the server's listen backlog; a
//     connection leaves the window when the transport says (Admitted): the
//     SSE engine at the TCP connect, the WebSocket engine at the 101;
//   - writing: bytes queued with Send (the first ones given to Open) go out
//     as the socket takes them; EPOLLOUT is asked for only while some wait;
//   - reading: from the connect (ReadStart::kOnConnect, WebSocket), or only
//     once every byte given to Open has gone out (kAfterFirstWrite, an HTTP
//     request); EPOLLIN while the transport wants input (SetWantRead). A
//     peer's FIN or an error is read even while EPOLLIN is off (epoll always
//     reports EPOLLHUP/EPOLLERR), so a paused reader still sees its end;
//   - ending: Close with a FIN or an RST; a failed socket, connect, send or
//     recv goes to Transport::OnFailed, then the loop closes the socket;
//   - timers and the progress tick (bench::EventLoop).
//
// Thread: one thread owns a ClientLoop, its transport and every socket;
// callbacks run inside Run(). Allocation: one ClientSocket (the transport's
// subclass) per connection and its write buffer while bytes wait; one shared
// read buffer of `read_buffer_bytes`. Never blocks except in epoll_wait;
// never retries a failed connect by itself; a closed socket is freed only
// after the epoll batch, never inside a callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "event_loop.h"

namespace tw::bench {

struct ClientLoopOptions {
  size_t max_connecting = 256;       // connects (and handshakes, for WebSocket) in flight at once
  size_t read_buffer_bytes = 65536;  // one recv() at most
  int rcvbuf_bytes = 0;              // > 0: SO_RCVBUF before connect
};

// When a socket starts taking input.
enum class ReadStart {
  kOnConnect,        // as soon as TCP connects (a WebSocket client reads the 101 while it writes)
  kAfterFirstWrite,  // once every byte given to Open has gone out (an HTTP request)
};

// One connection as the loop sees it. A transport derives its connection
// type from this and keeps its protocol state there.
class ClientSocket {
 public:
  virtual ~ClientSocket() = default;
  uint64_t tag() const { return tag_; }              // caller's label (stream index)
  double opened_us() const { return opened_us_; }    // connect() began; 0 while queued
  uint64_t wire_bytes_read() const { return wire_bytes_; }
  bool open() const { return fd_ >= 0; }
  bool closed() const { return phase_ == Phase::kClosed; }  // by Close, or after a failure
  int fd() const { return fd_; }                     // -1 while queued and once closed

 private:
  friend class ClientLoop;
  enum class Phase { kQueued, kConnecting, kConnected, kClosed };
  int fd_ = -1;
  Phase phase_ = Phase::kQueued;
  uint64_t tag_ = 0;
  ReadStart read_start_ = ReadStart::kOnConnect;
  bool admitting_ = false;    // counted in the connect window (connecting_)
  bool reading_ = false;      // input is taken (see ReadStart)
  bool want_read_ = true;     // EPOLLIN wanted once reading
  uint32_t interest_ = 0;     // the events registered with epoll
  int rcvbuf_bytes_ = 0;      // SO_RCVBUF before connect (0: the loop's)
  std::string out_;           // bytes not yet written, from out_off_
  size_t out_off_ = 0;
  double opened_us_ = 0;
  uint64_t wire_bytes_ = 0;
};

class ClientLoop {
 public:
  // What a protocol does with its sockets. Every callback runs inside Run
  // (or inside a ClientLoop call the transport made) and may Close the
  // socket or Send on it.
  class Transport {
   public:
    virtual ~Transport() = default;
    // TCP connected; nothing written yet.
    virtual void OnConnected(ClientSocket* s) = 0;
    // Every byte queued so far has gone out.
    virtual void OnWritten(ClientSocket*) {}
    // Bytes arrived (a view of the loop's read buffer, valid for the call).
    virtual void OnBytes(ClientSocket* s, std::string_view bytes) = 0;
    // The peer closed its side (a read of 0 bytes). The transport must end
    // the socket (Close): the FIN stays readable, so epoll reports it again.
    virtual void OnEof(ClientSocket* s) = 0;
    // socket, connect, send or recv failed (`why` names the call); the loop
    // closes the socket when this returns. Not called once it is closed.
    virtual void OnFailed(ClientSocket* s, const Status& why) = 0;
  };

  // `transport` must outlive the loop.
  ClientLoop(uint16_t port, ClientLoopOptions options, Transport* transport);
  ~ClientLoop();
  ClientLoop(const ClientLoop&) = delete;
  ClientLoop& operator=(const ClientLoop&) = delete;

  Status Init();

  // Queues a connection that will write `first_bytes`. The loop owns `s`;
  // the pointer stays valid until the socket is closed and the epoll batch
  // is over. `rcvbuf_bytes` > 0 overrides the loop's SO_RCVBUF; `want_read`
  // false: no EPOLLIN until SetWantRead.
  ClientSocket* Open(std::unique_ptr<ClientSocket> s, uint64_t tag, std::string first_bytes, ReadStart read_start,
                     int rcvbuf_bytes = 0, bool want_read = true);
  // Appends to the socket's write buffer and writes what the socket takes.
  // Ignored before the connect and once closed.
  void Send(ClientSocket* s, std::string_view bytes);
  // The socket leaves the connect window; a queued connect may start.
  void Admitted(ClientSocket* s);
  // Asks for EPOLLIN (once reading) or stops asking: with it off, the
  // kernel's receive buffer fills and the server's writes back up.
  void SetWantRead(ClientSocket* s, bool want);
  // Closes now: RST (SO_LINGER 0) when `reset`, else FIN. No callback follows.
  void Close(ClientSocket* s, bool reset);

  // Runs `fn` at NowUs() >= at_us (from inside Run).
  void At(double at_us, std::function<void()> fn) { loop_.At(at_us, std::move(fn)); }
  // Runs until `done()` is true or `deadline_us` passes; `tick` runs about
  // every `tick_ms` (the progress line). Returns false on the deadline.
  bool Run(const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick, int tick_ms);

  uint16_t port() const { return port_; }
  size_t open_count() const { return sockets_.size(); }  // queued ones too
  size_t connect_failures() const { return connect_failures_; }

 private:
  void StartQueued();
  void StartConnect(ClientSocket* s);
  void OnEvents(ClientSocket* s, uint32_t events);
  void Flush(ClientSocket* s);
  void ReadSome(ClientSocket* s);
  void Fail(ClientSocket* s, const Status& why);  // OnFailed, then close
  void UpdateInterest(ClientSocket* s);

  uint16_t port_;
  ClientLoopOptions options_;
  Transport* transport_;
  int epfd_ = -1;
  std::vector<char> buf_;
  std::unordered_map<ClientSocket*, std::unique_ptr<ClientSocket>> sockets_;
  std::queue<ClientSocket*> queued_;
  size_t connecting_ = 0;
  size_t connect_failures_ = 0;
  std::vector<std::unique_ptr<ClientSocket>> graveyard_;  // freed after each epoll batch
  EventLoop loop_;
};

}  // namespace tw::bench
