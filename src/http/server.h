// HTTP/1.1 server on one EventLoop: accepts connections, reads requests with
// RequestReader, routes them (router.h) and writes responses, complete or
// streamed (chunked), with back-pressure reported to the caller.
//
// Threads: everything here runs on the loop thread, except
// Server::connection_count(), which any thread may call. A Responder or
// StreamWriter may be kept after the handler returns and used later, but only
// on the loop thread (other threads hand work over with EventLoop::Post).
//
// Per connection (bounds in ServerOptions):
//   - one request at a time: the next pipelined request is parsed only after
//     the current response is complete (Send/SendError, or StreamWriter::
//     Finish), so pipelined responses come back in order; meanwhile reading
//     is paused and TCP flow control holds the client back;
//   - input: the RequestReader's bounds (431 header section / count, 413 body);
//   - output: max_output_bytes for stream chunks (StreamWriter::Write is
//     refused beyond it); complete responses from Send are always accepted
//     (their size is whatever the handler built); everything written in one
//     loop iteration leaves in one send at its end (net::Connection corking),
//     at most max_write_per_flush_bytes per iteration;
//   - deadlines (one timer per connection):
//       request: a request (head and body) must be complete within
//         header_timeout_ms of its first byte, else 408 request_timeout and
//         close (slow senders, "slowloris");
//       idle: with no request in progress, a connection that sends nothing
//         for keep_alive_idle_ms (after accept: min(header_timeout_ms,
//         keep_alive_idle_ms)) is closed silently;
//       no deadline while a response is in progress (streams are long).
//   - reader errors: the JSON error envelope with the reader's status
//     (400/413/431/501/505), "Connection: close", then close after flushing.
//   - a client's EOF (FIN) or RST is taken as the client leaving, also while
//     a response is in progress (StreamWriter::OnClose fires); complete
//     requests it sent before its FIN are not answered.
//   - HEAD is not special: unless a route registers it, it gets 404/405.
// Over max_connections: the new connection is accepted, answered 503
// "overloaded" (retryable, "Retry-After: 1", "Connection: close") and closed;
// it never gets a slot. After BeginShutdown (draining) the listening socket
// stays open: a new connection is served as usual but closed after its first
// response ("Connection: close"), so health probes are answered while the
// streams in flight finish; the routes decide what a draining server says.
//
// Closing: a connection that ends after its response (Connection: close,
// HTTP/1.0, an error, a drain) keeps sending while the client reads; after
// close_idle_ms with output queued and no byte sent it is reset (the client
// sees an error, not a clean end), and the bytes dropped are counted
// (tokenwire_http_unsent_bytes_total, tokenwire_http_close_resets_total).
//
// Access log (ServerOptions::log): one "access" record per response, when
// its last byte has left this process (into the kernel's socket buffer) or
// its connection closed, whichever is first, with method, path (the target
// without its query), status, body bytes, duration in ms from the request's
// dispatch to the response's completion, its request_id, and for an error
// answer its type and message. When the connection closed with part of the response unsent,
// "bytes" is what left, "unsent" the wire bytes that did not, and "outcome"
// says why: "closed" (the client went away) or "reset" (it stopped reading).
// A record waits only while part of its response is in the connection's
// output buffer, and no request is read while that is over
// max_output_bytes, so the records waiting are bounded by it too.
// Level: info below 400, warn for 4xx, error for 5xx. A 503 to a connection
// over max_connections is logged as "rejected" (warn).
//
// Every response (a handler's, streamed, an error of the router or the
// reader, a 101) carries X-Request-Id (request_id.h) and, under a CORS
// policy, the CORS headers (cors.h); a CORS preflight from an allowed
// origin is answered 204 before routing. The 503 over max_connections comes
// before any request: it has neither.
//
// Protocol switch (WebSocket): Responder::Upgrade writes the 101 head, takes
// the bytes the reader holds past the request, and gives the net::Connection
// to a handler made by the caller. The HTTP connection keeps owning both (the
// table slot, the 408/idle timers are off) and forwards input, drain and close
// to that handler; on BeginShutdown it calls the handler's OnShutdown().
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/api_error.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "http/cors.h"
#include "http/request_reader.h"
#include "http/response.h"
#include "net/connection.h"
#include "net/event_loop.h"
#include "net/listener.h"

namespace tw::http {

class HttpConnection;  // http_connection.h
class Router;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                         // 0: ephemeral, see Server::port()
  size_t max_connections = 4096;           // open connections; beyond: 503
  size_t max_header_bytes = 16384;         // request line + headers (431)
  size_t max_headers = 100;                // header count (431)
  size_t max_body_bytes = 1 << 20;         // request body (413)
  int64_t header_timeout_ms = 10000;       // request complete within this of its first byte (408)
  int64_t keep_alive_idle_ms = 60000;      // idle connection closed after this
  size_t max_output_bytes = 1 << 20;       // per connection: buffered stream bytes
  size_t write_low_watermark_bytes = 64 << 10;  // StreamWriter::OnWritable threshold
  size_t read_chunk_bytes = 64 << 10;      // bytes read per readable event
  int socket_send_buffer_bytes = 0;        // SO_SNDBUF per connection (0: kernel default, autotuned)
  int64_t close_idle_ms = 10000;           // closing connection: longest wait with no byte sent (then reset)
  size_t max_write_per_flush_bytes = 64 << 10;  // per connection per loop iteration (corked sends)
  // The access log: one record per response (see the file comment); null:
  // nothing is logged.
  Logger* log = nullptr;
  // Which Origins get CORS headers, and the preflight answer (cors.h);
  // empty: no CORS header at all.
  CorsPolicy cors;
  // The body of every error answer the HTTP layer writes (Responder::
  // SendError, the router's 404 and 405, the reader's 400/408/413/431/501),
  // by the request's path ("" when no request head was read); null:
  // json::ErrorEnvelope (DESIGN.md §4). The app answers another API's paths
  // in that API's envelope with it; this layer knows no API.
  std::function<std::string(std::string_view path, const ApiError& e)> error_body;
};

using PathParams = std::vector<std::pair<std::string, std::string>>;

// One streaming response (chunked transfer coding; for an HTTP/1.0 client the
// body runs until close). Created by Responder::StartStream.
class StreamWriter {
 public:
  using WriteResult = net::WriteResult;  // kTaken, kQueued, kRefused, kClosed

  // One chunk. kTaken: in the socket; kQueued: partly or wholly buffered;
  // kRefused: buffered + this chunk would pass max_output_bytes, nothing was
  // written (try again after OnWritable); kClosed: finished, aborted or the
  // connection is gone. An empty chunk is a no-op (kTaken). A chunk larger
  // than max_output_bytes (framing included) can never be taken.
  WriteResult Write(std::string_view bytes);
  size_t buffered_bytes() const;
  size_t max_output_bytes() const { return max_output_bytes_; }
  // Called when buffered bytes fall to/below write_low_watermark_bytes after
  // a write was refused or left them above it (the client read).
  void OnWritable(std::function<void()> fn) { on_writable_ = std::move(fn); }
  // Called once if the connection closes before Finish(): peer FIN/RST, write
  // error, server shutdown/destruction, or Abort() (called before Abort returns).
  void OnClose(std::function<void()> fn) { on_close_ = std::move(fn); }
  // Ends the body (last chunk; never refused). The connection returns to
  // keep-alive, or closes after flushing if it must. Callbacks are dropped.
  void Finish();
  // Closes the connection now; buffered bytes are dropped.
  void Abort();
  bool done() const { return done_; }  // finished, aborted or closed

  StreamWriter(std::weak_ptr<HttpConnection> conn, uint64_t seq, bool chunked,
               size_t max_output_bytes);  // used by Responder::StartStream

 private:
  friend class HttpConnection;
  friend class Responder;
  void NotifyWritable();
  void NotifyClosed();

  std::weak_ptr<HttpConnection> conn_;
  uint64_t seq_;
  bool chunked_;
  size_t max_output_bytes_;
  bool done_ = false;
  std::function<void()> on_writable_;
  std::function<void()> on_close_;
};

// Cheap copyable handle to the response slot of one request. Valid after the
// handler returns (answer later from a timer or a Post). Only the first of
// Send / SendError / StartStream takes effect; after that, or once the
// connection is gone (closed() == true), they are no-ops (StartStream then
// returns a writer whose Write answers kClosed).
class Responder {
 public:
  Responder() = default;  // detached: closed() is true
  Responder(std::weak_ptr<HttpConnection> conn, uint64_t seq) : conn_(std::move(conn)), seq_(seq) {}

  // Complete response with Content-Length.
  void Send(int status, std::string content_type, std::string body, const Headers& extra_headers = {});
  // An ApiError as a JSON answer: its status, the body ServerOptions::
  // error_body makes for the request's path (else DESIGN.md §4's envelope
  // {"error":{"type","message","retryable",…}}), and Retry-After (seconds,
  // rounded up) when it has retry_after_ms. The one way an error is answered.
  void SendError(const ApiError& e, const Headers& extra_headers = {});
  // Response head with Transfer-Encoding: chunked; the body follows through
  // the returned writer.
  std::shared_ptr<StreamWriter> StartStream(int status, std::string content_type,
                                            const Headers& extra_headers = {});
  bool closed() const;
  // Runs `fn` once if the connection closes (the client left) before a
  // response has begun: an answer that is not streamed learns at once that
  // nobody will read it, however long it has before its first byte. False
  // (nothing registered) if the connection is already gone or this
  // Responder has answered. A later call replaces the earlier function.
  bool OnClientGone(std::function<void()> fn);

  // Switches the connection to another protocol (see the file comment).
  // `response_head` is written as-is (e.g. "HTTP/1.1 101 Switching
  // Protocols\r\n…\r\n\r\n"); make_handler receives the connection and the
  // bytes already read past the request, and returns the new handler (null:
  // the connection is closed after flushing). False (nothing written) if this
  // Responder has already answered or its connection is gone.
  using UpgradeFn = std::function<std::unique_ptr<net::ConnectionHandler>(
      net::Connection* conn, std::string leftover)>;
  bool Upgrade(std::string_view response_head, const UpgradeFn& make_handler);

  // The request's id (request_id.h: the client's X-Request-Id when valid,
  // else one the server made), which every response to it carries; "" once
  // the connection is gone or has moved on to a later request.
  std::string request_id() const;

  // Path parameters captured by the route pattern ("{id}" → Param("id")),
  // "" if absent.
  std::string_view Param(std::string_view name) const;
  const PathParams& params() const;

 private:
  friend class Router;
  std::weak_ptr<HttpConnection> conn_;
  uint64_t seq_ = 0;
  std::shared_ptr<const PathParams> params_;
};

// The Request reference is valid only during the call; an async handler
// copies what it needs and keeps the Responder.
using Handler = std::function<void(const Request&, Responder)>;

class Server {
 public:
  // loop, router: borrowed, must outlive the Server. metrics may be null (a
  // private registry is used then).
  Server(net::EventLoop* loop, ServerOptions options, Router* router, Metrics* metrics);
  ~Server();  // closes every connection (open streams see OnClose)
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts accepting. On the loop thread or before Run().
  Status Start();
  int port() const { return listener_.port(); }
  // Draining: closes idle keep-alive connections, lets in-flight responses
  // finish (then closes them), serves new connections one response each,
  // and calls on_idle (posted to the loop) once no connection is left.
  void BeginShutdown(std::function<void()> on_idle);
  bool shutting_down() const { return shutting_down_; }
  // THREAD-SAFE. Open connections (including ones closing after a flush).
  size_t connection_count() const { return count_.load(std::memory_order_relaxed); }
  const ServerOptions& options() const { return options_; }

 private:
  friend class HttpConnection;
  void OnAccept(int fd);
  void Remove(HttpConnection* c);
  void CountResponse(int status);

  net::EventLoop* loop_;
  ServerOptions options_;
  Router* router_;
  std::unique_ptr<Metrics> own_metrics_;
  Metrics* metrics_;
  Gauge* m_connections_;
  Counter* m_accepted_;
  Counter* m_rejected_;
  LabeledCounter* m_requests_;
  Counter* m_bytes_in_;
  Counter* m_bytes_out_;
  Counter* m_unsent_bytes_;
  Counter* m_ws_unsent_bytes_;
  Counter* m_close_resets_;
  std::array<Counter*, 600> by_code_{};  // cache of m_requests_->With(code)

  net::Listener listener_;
  std::unordered_map<HttpConnection*, std::shared_ptr<HttpConnection>> conns_;
  std::atomic<size_t> count_{0};
  bool shutting_down_ = false;
  bool destroying_ = false;
  std::function<void()> on_idle_;
};

}  // namespace tw::http
