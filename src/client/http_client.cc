#include "client/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tw::client {
namespace {

bool HasHeader(const Request& r, std::string_view name) {
  ResponseHead h;  // reuse its case-insensitive Find
  h.headers = r.headers;
  return h.Find(name) != nullptr;
}

}  // namespace

std::string FormatRequest(const Request& request, uint16_t port) {
  std::string out = request.method + " " + request.target + " HTTP/1.1\r\n";
  if (request.add_default_headers) {
    if (!HasHeader(request, "host")) out += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
    bool wants_length = !request.body.empty() || request.method == "POST" ||
                        request.method == "PUT" || request.method == "PATCH";
    if (wants_length && !HasHeader(request, "content-length") &&
        !HasHeader(request, "transfer-encoding")) {
      out += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
    }
  }
  for (const auto& [name, value] : request.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  out += request.body;
  return out;
}

void WidenReceiveWindow(int fd) {
  int bytes = 1 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  int clamp = 65535;  // the most a connection without window scaling can offer
  ::setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof clamp);
}

HttpClient::HttpClient(ClientOptions options) : options_(options), parser_(options.limits) {}

HttpClient::~HttpClient() { Close(); }

Status HttpClient::Connect(uint16_t port) {
  Close();
  port_ = port;
  inbuf_.clear();
  head_queue_.clear();
  eof_ = false;
  const std::string where = "127.0.0.1:" + std::to_string(port);
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Status::FromErrno("socket");
  if (options_.rcvbuf_bytes > 0) {
    // Before connect(), so the advertised window is small from the start.
    int v = options_.rcvbuf_bytes;
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) != 0) {
      Status s = Status::FromErrno("setsockopt(SO_RCVBUF)");
      Close();
      return s;
    }
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // best effort
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) {
      Status s = Status::FromErrno("connect(" + where + ")");
      Close();
      return s;
    }
    Status s = Wait(POLLOUT, options_.connect_timeout_ms, "connect");
    if (!s.ok()) {
      Close();
      return s;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      s = Status::FromErrno("getsockopt(SO_ERROR)");
      Close();
      return s;
    }
    if (err != 0) {
      errno = err;
      s = Status::FromErrno("connect(" + where + ")");
      Close();
      return s;
    }
  }
  return Status::Ok();
}

Status HttpClient::Wait(short events, int timeout_ms, const char* what) {
  if (fd_ < 0) return Status::Error(std::string(what) + ": not connected");
  pollfd p{fd_, events, 0};
  while (true) {
    int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return Status::Ok();  // ready, or POLLERR/POLLHUP: the next call reports it
    if (r == 0) {
      return Status::Error("poll: timed out after " + std::to_string(timeout_ms) + " ms waiting to " +
                           what + " (127.0.0.1:" + std::to_string(port_) + ", " +
                           std::to_string(inbuf_.size()) + " unparsed bytes buffered)");
    }
    if (errno != EINTR) return Status::FromErrno("poll");
  }
}

Status HttpClient::SendRaw(std::string_view bytes) {
  while (!bytes.empty()) {
    if (fd_ < 0) return Status::Error("send: not connected");
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status s = Wait(POLLOUT, options_.io_timeout_ms, "send");
      if (!s.ok()) return s;
      continue;
    }
    return Status::FromErrno("send");
  }
  return Status::Ok();
}

Status HttpClient::SendRequest(const Request& request) {
  Status s = SendRaw(FormatRequest(request, port_));
  if (s.ok()) head_queue_.push_back(request.method == "HEAD");
  return s;
}

Status HttpClient::ReadMore(bool* eof, int timeout_ms, const char* what) {
  *eof = false;
  while (true) {
    Status s = Wait(POLLIN, timeout_ms, what);
    if (!s.ok()) return s;
    size_t old = inbuf_.size();
    inbuf_.resize(old + options_.read_chunk_bytes);
    ssize_t n = ::read(fd_, inbuf_.data() + old, options_.read_chunk_bytes);
    inbuf_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n > 0) return Status::Ok();
    if (n == 0) {
      *eof = eof_ = true;
      return Status::Ok();
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    return Status::FromErrno("read");
  }
}

Status HttpClient::FeedBuffered() {
  size_t consumed = 0;
  Status s = parser_.Feed(inbuf_, &consumed);
  inbuf_.erase(0, consumed);
  return s;
}

Status HttpClient::ReadHead(ResponseHead* head) {
  bool was_head = false;
  if (!head_queue_.empty()) {
    was_head = head_queue_.front();
    head_queue_.pop_front();
  }
  parser_.Reset(was_head);
  parser_.set_body_sink(nullptr);
  while (true) {
    Status s = FeedBuffered();
    if (!s.ok()) return s;
    if (parser_.head_done()) {
      *head = parser_.head();
      return Status::Ok();
    }
    if (eof_) return parser_.FeedEof();  // always an error here
    bool eof = false;
    s = ReadMore(&eof, options_.io_timeout_ms, "read the response head");
    if (!s.ok()) return s;
  }
}

Status HttpClient::ReadBody(const BodyCallback& on_body, bool* complete) {
  *complete = false;
  if (!parser_.head_done()) return Status::Error("ReadBody: no response head has been read");
  bool stopped = false;
  parser_.set_body_sink([&](std::string_view bytes) {
    if (on_body && !on_body(bytes)) stopped = true;
    return !stopped;
  });
  Status result;
  while (true) {
    result = FeedBuffered();
    if (!result.ok() || stopped) break;
    if (parser_.done()) {
      *complete = true;
      break;
    }
    if (eof_) {
      result = parser_.FeedEof();
      *complete = result.ok();
      break;
    }
    bool eof = false;
    result = ReadMore(&eof, options_.io_timeout_ms, "read the response body");
    if (!result.ok()) break;
  }
  parser_.set_body_sink(nullptr);  // the lambda refers to this frame
  return result;
}

Status HttpClient::ReadResponse(Response* response) {
  response->body.clear();
  Status s = ReadHead(&response->head);
  if (!s.ok()) return s;
  Status over;
  bool complete = false;
  s = ReadBody(
      [&](std::string_view bytes) {
        if (response->body.size() + bytes.size() > options_.max_body_bytes) {
          over = Status::Error("response body over max_body_bytes (" +
                               std::to_string(options_.max_body_bytes) + ")");
          return false;
        }
        response->body.append(bytes);
        return true;
      },
      &complete);
  if (!over.ok()) return over;
  return s;
}

Status HttpClient::RoundTrip(const Request& request, Response* response) {
  Status s = SendRequest(request);
  if (!s.ok()) return s;
  return ReadResponse(response);
}

Status HttpClient::ReadSome(std::string* out, int timeout_ms) {
  if (inbuf_.empty()) {
    if (eof_) return Status::Error("read: the peer closed the connection");
    bool eof = false;
    Status s = ReadMore(&eof, timeout_ms, "read");
    if (!s.ok()) return s;
    if (eof) return Status::Error("read: the peer closed the connection");
  }
  out->append(inbuf_);
  inbuf_.clear();
  return Status::Ok();
}

Status HttpClient::ReadUntilClose(std::string* out) {
  while (true) {
    if (out->size() + inbuf_.size() > options_.max_body_bytes) {
      return Status::Error("ReadUntilClose: over max_body_bytes (" +
                           std::to_string(options_.max_body_bytes) + ")");
    }
    out->append(inbuf_);
    inbuf_.clear();
    if (eof_) return Status::Ok();
    bool eof = false;
    Status s = ReadMore(&eof, options_.io_timeout_ms, "read until the peer closes");
    if (!s.ok()) return s;
  }
}

Status HttpClient::ExpectClosed(int timeout_ms) {
  if (!inbuf_.empty()) {
    return Status::Error("expected the peer to close, but " + std::to_string(inbuf_.size()) +
                         " bytes are buffered");
  }
  if (eof_) return Status::Ok();
  char buf[512];
  while (true) {
    Status s = Wait(POLLIN, timeout_ms, "see the peer close");
    if (!s.ok()) return s;
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {  // FIN or RST: both are a close
      eof_ = true;
      return Status::Ok();
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) return Status::FromErrno("read");
    inbuf_.append(buf, static_cast<size_t>(n));
    return Status::Error("expected the peer to close, but " + std::to_string(n) +
                         " bytes arrived: \"" + inbuf_.substr(0, 64) + "\"");
  }
}

void HttpClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HttpClient::CloseWithReset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  Close();
}

Status Fetch(uint16_t port, const Request& request, Response* response, ClientOptions options) {
  HttpClient client(options);
  Status s = client.Connect(port);
  if (!s.ok()) return s;
  return client.RoundTrip(request, response);
}

}  // namespace tw::client
