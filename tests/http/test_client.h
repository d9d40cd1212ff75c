// Test-side helpers for loopback server tests: a raw-socket HTTP client with
// its own small response parser (independent of src/http), and a fixture that
// runs a Server on a background EventLoop thread.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "http/router.h"
#include "http/server.h"
#include "net/event_loop.h"

namespace tw::testing {

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool chunked = false;
  std::vector<std::string> chunks;  // chunked bodies, chunk by chunk
  std::string Header(std::string_view name) const;  // case-insensitive, "" if absent
};

class RawClient {
 public:
  RawClient() = default;
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // rcvbuf > 0 sets SO_RCVBUF before connecting. Returns false with errno set.
  bool Connect(int port, int rcvbuf = 0);
  bool SendAll(std::string_view bytes);
  // Reads one whole response (a 1xx counts as one). False on timeout/EOF.
  bool ReadResponse(ClientResponse* out, int timeout_ms = 5000);
  // Reads and discards until EOF/reset; true if the peer closed in time.
  bool WaitClosed(int timeout_ms = 5000);
  // Reads whatever arrives within timeout_ms into the internal buffer; returns
  // bytes read (0 on timeout, -1 on EOF/error).
  long ReadSome(int timeout_ms);
  // RST instead of FIN (SO_LINGER 0) then close.
  void Reset();
  void Close();
  int fd() const { return fd_; }
  std::string& buffer() { return buf_; }

 private:
  // Parses a complete response from buf_ if there is one (consumes it).
  bool TryParse(ClientResponse* out, bool at_eof);
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
  size_t scan_from_ = 0;  // chunked pre-check: bytes of buf_ already searched
};

// A Server on its own loop thread. Routes are added before Start().
class ServerFixture {
 public:
  explicit ServerFixture(http::ServerOptions options = {});
  ~ServerFixture();
  http::Router& router() { return router_; }
  // Starts the server (port 0) and the loop thread. False on failure.
  bool Start();
  int port() const { return port_; }
  // Runs fn on the loop thread and waits for it.
  void RunOnLoop(const std::function<void()>& fn);
  net::EventLoop& loop() { return loop_; }
  http::Server& server() { return *server_; }
  Metrics& metrics() { return metrics_; }
  // Polls cond (on the test thread) until true or timeout; no fixed sleeps.
  static bool WaitFor(const std::function<bool()>& cond, int timeout_ms = 5000);

 private:
  http::ServerOptions options_;
  net::EventLoop loop_;
  http::Router router_;
  Metrics metrics_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// "GET path HTTP/1.1" with Host and optional extra header lines.
std::string Get(std::string_view path, std::string_view extra = "");

}  // namespace tw::testing
