// A small blocking HTTP/1.1 client over one TCP connection to 127.0.0.1, for
// the project's loopback tests and tools (never used by the server).
//
// It sends raw bytes or a Request, and reads responses with ResponseParser:
// whole (ReadResponse), or streaming (ReadHead, then ReadBody handing the
// de-chunked body to a callback as it arrives). Every wait is a poll() with a
// timeout, so a test can never hang on a silent server: connect waits up to
// connect_timeout_ms, every read or write up to io_timeout_ms of silence.
// For slow-reader tests, rcvbuf_bytes sets SO_RCVBUF before connecting (the
// kernel rounds it, and may double it); CloseWithReset() closes with an RST
// (SO_LINGER 0) instead of a FIN.
//
// Errors: every failure is a Status naming the system call and strerror, or
// the timeout and how many bytes had arrived. No exceptions, no signals
// (writes use MSG_NOSIGNAL).
// Bounds: ReadResponse holds at most max_body_bytes of body; the streaming
// path holds nothing beyond one read of read_chunk_bytes plus the bytes not
// yet parsed. Thread-safety: one thread per HttpClient.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/response_parser.h"
#include "common/status.h"

namespace tw::client {

struct ClientOptions {
  int connect_timeout_ms = 2000;    // connect() completion
  int io_timeout_ms = 5000;         // longest silence while reading or writing
  int rcvbuf_bytes = 0;             // > 0: SO_RCVBUF set before connect
  size_t max_body_bytes = 64 << 20; // ReadResponse's body buffer
  size_t read_chunk_bytes = 16384;  // one read() at most
  ResponseLimits limits;
};

struct Request {
  std::string method = "GET";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Adds "Host: 127.0.0.1:<port>" and, when there is a body or the method is
  // POST/PUT/PATCH, "Content-Length", unless `headers` already has them.
  bool add_default_headers = true;
};

struct Response {
  ResponseHead head;
  std::string body;  // de-chunked
};

// The request's bytes as SendRequest writes them (exposed for tests).
std::string FormatRequest(const Request& request, uint16_t port);

// For a reader that was slow (a small rcvbuf_bytes) and now reads at full
// speed: widens fd's receive buffer and window. With a window below the
// sender's segment size, Linux sends only on its 200 ms persist probes, so a
// 4 KB receive buffer turns "read everything now" into a few KB per probe.
void WidenReceiveWindow(int fd);

class HttpClient {
 public:
  // Receives body bytes; return false to stop reading (ReadBody returns OK
  // with *complete == false; the rest of the body is left unread).
  using BodyCallback = std::function<bool(std::string_view)>;

  explicit HttpClient(ClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Status Connect(uint16_t port);
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  Status SendRaw(std::string_view bytes);
  Status SendRequest(const Request& request);

  // Reads the next response's head (skipping 1xx other than 101). Whether
  // the response answers a HEAD request (so has no body) is taken from the
  // queue of methods SendRequest sent; SendRaw queues nothing (see
  // ExpectHeadResponse).
  Status ReadHead(ResponseHead* head);
  // After ReadHead: reads the body to its end (*complete = true) or until
  // on_body returns false. Bytes after the response stay buffered for the
  // next ReadHead (pipelining).
  Status ReadBody(const BodyCallback& on_body, bool* complete);
  // ReadHead + ReadBody into *response (bounded by max_body_bytes).
  Status ReadResponse(Response* response);
  // SendRequest + ReadResponse.
  Status RoundTrip(const Request& request, Response* response);

  // Raw reading, for tests that check exact bytes or the peer's close.
  // Whatever arrives within timeout_ms (at least one byte, or an error).
  Status ReadSome(std::string* out, int timeout_ms);
  // Everything until the peer closes; bounded by max_body_bytes.
  Status ReadUntilClose(std::string* out);
  // OK when the peer closes (EOF or reset) within timeout_ms with no more
  // data; data arriving first or the timeout is an error.
  Status ExpectClosed(int timeout_ms);

  // Queues "a response to HEAD" for a HEAD request sent with SendRaw.
  void ExpectHeadResponse() { head_queue_.push_back(true); }

  void Close();           // FIN
  void CloseWithReset();  // SO_LINGER {1, 0}: RST, unread data discarded

  // Bytes received but not yet consumed by a response.
  const std::string& buffered() const { return inbuf_; }

 private:
  // Waits for `events` on fd_ up to timeout_ms; `what` names the wait.
  Status Wait(short events, int timeout_ms, const char* what);
  // One read() into inbuf_; *eof set when the peer closed.
  Status ReadMore(bool* eof, int timeout_ms, const char* what);
  // Feeds inbuf_ to parser_ until it stops; erases what it consumed.
  Status FeedBuffered();

  ClientOptions options_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string inbuf_;
  ResponseParser parser_;
  std::deque<bool> head_queue_;  // per request sent and not yet answered: was HEAD
  bool eof_ = false;  // the peer closed its side
};

// Connects, sends one request, reads one response.
Status Fetch(uint16_t port, const Request& request, Response* response, ClientOptions options = {});

}  // namespace tw::client
