#include "net/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tw::net {

Status Listener::Open(const std::string& host_in, int port) {
  if (port < 0 || port > 65535) return Status::Error("listen: port " + std::to_string(port) + " out of range");
  std::string host = host_in == "localhost" ? "127.0.0.1" : host_in;
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    family = AF_INET;
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v6;
  } else {
    return Status::Error("listen: host '" + host_in + "' is not a numeric IPv4/IPv6 address");
  }
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket");
  int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    Status s = Status::FromErrno("setsockopt(SO_REUSEADDR)");
    ::close(fd);
    return s;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    Status s = Status::FromErrno("bind(" + host_in + ":" + std::to_string(port) + ")");
    ::close(fd);
    return s;
  }
  if (::listen(fd, kBacklog) != 0) {
    Status s = Status::FromErrno("listen");
    ::close(fd);
    return s;
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen) != 0) {
    Status s = Status::FromErrno("getsockname");
    ::close(fd);
    return s;
  }
  port_ = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                            : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  fd_ = fd;
  return Status::Ok();
}

Status Listener::Start(AcceptFn fn) {
  if (fd_ < 0) return Status::Error("Listener::Start: not open");
  on_accept_ = std::move(fn);
  return loop_->AddFileEvent(fd_, kReadable, [this](int, int) { OnReadable(); });
}

void Listener::Close() {
  if (pause_timer_ != 0) {
    loop_->CancelTimer(pause_timer_);
    pause_timer_ = 0;
  }
  if (fd_ < 0) return;
  loop_->RemoveFileEvent(fd_);
  ::close(fd_);
  fd_ = -1;
}

void Listener::ReportAcceptError(int err, int64_t pause_ms) {
  if (log_ != nullptr) {
    LogIf(log_, LogLevel::kError, "accept_failed",
          {{"call", "accept4"}, {"errno", err}, {"error", std::strerror(err)}, {"pause_ms", pause_ms}});
    return;
  }
  std::fprintf(stderr, "accept4: %s; pausing accepts for %lld ms\n", std::strerror(err),
               static_cast<long long>(pause_ms));
}

void Listener::OnReadable() {
  for (int i = 0; i < kMaxAcceptsPerEvent && fd_ >= 0; ++i) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;  // retry / peer gave up already
      if (errno == EMFILE || errno == ENFILE) {
        ReportAcceptError(errno, kAcceptPauseMs);
        loop_->SetFileEventMask(fd_, 0);
        pause_timer_ = loop_->AddTimer(kAcceptPauseMs, [this] {
          pause_timer_ = 0;
          if (fd_ >= 0) loop_->SetFileEventMask(fd_, kReadable);
        });
        return;
      }
      ReportAcceptError(errno, 0);
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // best effort
    on_accept_(fd);
  }
}

void SendAndClose(int fd, std::string_view bytes) {
  // Drain what the client already sent: closing with unread input makes the
  // kernel send RST, which can destroy our reply before the client reads it.
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
  ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)n;
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace tw::net
