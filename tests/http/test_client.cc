#include "test_client.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <strings.h>

namespace tw::testing {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string ClientResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  }
  return "";
}

RawClient::~RawClient() { Close(); }

bool RawClient::Connect(int port, int rcvbuf) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    errno = e;
    return false;
  }
  return true;
}

bool RawClient::SendAll(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

long RawClient::ReadSome(int timeout_ms) {
  if (eof_) return -1;
  pollfd p{fd_, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  if (r <= 0) return 0;
  char tmp[65536];
  ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
  if (n <= 0) {
    eof_ = true;
    return -1;
  }
  buf_.append(tmp, static_cast<size_t>(n));
  return n;
}

bool RawClient::TryParse(ClientResponse* out, bool at_eof) {
  size_t end = buf_.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  ClientResponse r;
  std::string_view head(buf_.data(), end);
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (status_line.substr(0, 9) != "HTTP/1.1 " || status_line.size() < 12) return false;
  r.status = std::stoi(std::string(status_line.substr(9, 3)));
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    std::string_view line = head.substr(start, line_end == std::string_view::npos ? head.npos : line_end - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(v));
  }
  size_t pos = end + 4;
  if ((r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304) {  // no body (RFC 9112 §6.3)
    buf_.erase(0, pos);
    scan_from_ = 0;
    *out = std::move(r);
    return true;
  }
  if (r.Header("Transfer-Encoding") == "chunked") {
    // Cheap pre-check (bodies in these tests never contain the last-chunk
    // bytes): skip the full parse until the terminator may have arrived, and
    // never rescan bytes already searched.
    size_t from = std::max(pos, scan_from_ >= 5 ? scan_from_ - 5 : 0);
    if (buf_.find("0\r\n\r\n", from) == std::string::npos) {
      scan_from_ = buf_.size();
      return false;
    }
    r.chunked = true;
    while (true) {
      size_t le = buf_.find("\r\n", pos);
      if (le == std::string::npos) return false;
      size_t size = std::stoul(buf_.substr(pos, le - pos), nullptr, 16);
      if (buf_.size() < le + 2 + size + 2) return false;
      if (size == 0) {
        pos = le + 4;  // "0\r\n\r\n" (no trailers from our server)
        break;
      }
      r.chunks.push_back(buf_.substr(le + 2, size));
      r.body += r.chunks.back();
      pos = le + 2 + size + 2;
    }
  } else if (!r.Header("Content-Length").empty()) {
    size_t len = std::stoul(r.Header("Content-Length"));
    if (buf_.size() < pos + len) return false;
    r.body = buf_.substr(pos, len);
    pos += len;
  } else {
    if (!at_eof) return false;
    r.body = buf_.substr(pos);
    pos = buf_.size();
  }
  buf_.erase(0, pos);
  scan_from_ = 0;
  *out = std::move(r);
  return true;
}

bool RawClient::ReadResponse(ClientResponse* out, int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  while (true) {
    if (TryParse(out, eof_)) return true;
    if (eof_) return false;
    int64_t left = deadline - NowMs();
    if (left <= 0) return false;
    ReadSome(static_cast<int>(left));
  }
}

bool RawClient::WaitClosed(int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  while (!eof_) {
    int64_t left = deadline - NowMs();
    if (left <= 0) return false;
    ReadSome(static_cast<int>(left));
  }
  return true;
}

void RawClient::Reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  Close();
}

void RawClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ServerFixture::ServerFixture(http::ServerOptions options) : options_(std::move(options)) {
  options_.host = "127.0.0.1";
  options_.port = 0;
}

ServerFixture::~ServerFixture() {
  if (thread_.joinable()) {
    loop_.Post([this] {
      server_.reset();
      loop_.Stop();
    });
    thread_.join();
  }
}

bool ServerFixture::Start() {
  if (!loop_.Init().ok()) return false;
  server_ = std::make_unique<http::Server>(&loop_, options_, &router_, &metrics_);
  Status s = server_->Start();
  if (!s.ok()) return false;
  port_ = server_->port();
  thread_ = std::thread([this] { (void)loop_.Run(); });
  return true;
}

void ServerFixture::RunOnLoop(const std::function<void()>& fn) {
  std::promise<void> done;
  loop_.Post([&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

bool ServerFixture::WaitFor(const std::function<bool()>& cond, int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  while (!cond()) {
    if (NowMs() > deadline) return false;
    std::this_thread::yield();
    ::usleep(1000);  // polling interval, not synchronisation
  }
  return true;
}

std::string Get(std::string_view path, std::string_view extra) {
  std::string s = "GET ";
  s += path;
  s += " HTTP/1.1\r\nHost: test\r\n";
  s += extra;
  s += "\r\n";
  return s;
}

}  // namespace tw::testing
