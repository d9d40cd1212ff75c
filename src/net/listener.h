// Listener: the listening TCP socket and its accept loop.
//
// Open() binds host:port (a numeric IPv4/IPv6 address or "localhost"; port 0
// picks an ephemeral port, reported by port()) with SO_REUSEADDR and listens.
// Each readable event accepts up to `kMaxAcceptsPerEvent` connections with
// accept4(SOCK_NONBLOCK | SOCK_CLOEXEC), sets TCP_NODELAY on each (responses
// and stream chunks are small and latency-bound) and hands the fd to the
// callback, which owns it from then on.
//
// Threads: the loop thread only. Allocates nothing per connection.
// On EMFILE/ENFILE (out of descriptors) accepting pauses for
// `kAcceptPauseMs`: with a level-triggered listening socket the loop would
// otherwise spin on the same pending connection.
// Never: resolves names through DNS (no getaddrinfo in the static binary).
#pragma once

#include <functional>
#include <string>

#include "common/log.h"
#include "common/status.h"
#include "net/event_loop.h"

namespace tw::net {

class Listener {
 public:
  static constexpr int kBacklog = 1024;             // listen(2) backlog
  static constexpr int kMaxAcceptsPerEvent = 64;    // fairness with other fds
  static constexpr int64_t kAcceptPauseMs = 100;    // after EMFILE/ENFILE

  using AcceptFn = std::function<void(int fd)>;

  explicit Listener(EventLoop* loop) : loop_(loop) {}
  ~Listener() { Close(); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  Status Open(const std::string& host, int port);
  // Starts accepting; fn receives each accepted fd (non-blocking, NODELAY).
  Status Start(AcceptFn fn);
  // Stops accepting and closes the socket: later connects are refused.
  void Close();
  int port() const { return port_; }
  // Where a failed accept4 is reported (with its errno); null: stderr.
  void set_log(Logger* log) { log_ = log; }

 private:
  void OnReadable();
  void ReportAcceptError(int err, int64_t pause_ms);

  EventLoop* loop_;
  int fd_ = -1;
  int port_ = 0;
  AcceptFn on_accept_;
  EventLoop::TimerId pause_timer_ = 0;
  Logger* log_ = nullptr;
};

// Reads and discards whatever the socket has now, sends `bytes` once (both
// non-blocking), shuts down the write side and closes. Used to turn away a
// connection without giving it a slot. Best effort: errors are ignored.
void SendAndClose(int fd, std::string_view bytes);

}  // namespace tw::net
