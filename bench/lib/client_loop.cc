#include "client_loop.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tw::bench {

ClientLoop::ClientLoop(uint16_t port, ClientLoopOptions options, Transport* transport)
    : port_(port), options_(options), transport_(transport), buf_(options.read_buffer_bytes) {}

ClientLoop::~ClientLoop() {
  for (auto& [s, owned] : sockets_) {
    if (s->fd_ >= 0) ::close(s->fd_);
  }
  if (epfd_ >= 0) ::close(epfd_);
}

Status ClientLoop::Init() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return Status::FromErrno("epoll_create1");
  return Status::Ok();
}

ClientSocket* ClientLoop::Open(std::unique_ptr<ClientSocket> owned, uint64_t tag, std::string first_bytes,
                               ReadStart read_start, int rcvbuf_bytes, bool want_read) {
  ClientSocket* s = owned.get();
  s->tag_ = tag;
  s->out_ = std::move(first_bytes);
  s->read_start_ = read_start;
  s->rcvbuf_bytes_ = rcvbuf_bytes;
  s->want_read_ = want_read;
  sockets_.emplace(s, std::move(owned));
  queued_.push(s);
  StartQueued();
  return s;
}

void ClientLoop::StartQueued() {
  while (connecting_ < options_.max_connecting && !queued_.empty()) {
    ClientSocket* s = queued_.front();
    queued_.pop();
    if (s->phase_ != ClientSocket::Phase::kQueued) continue;  // closed while queued
    StartConnect(s);
  }
}

void ClientLoop::StartConnect(ClientSocket* s) {
  s->opened_us_ = NowUs();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    connect_failures_++;
    Fail(s, Status::FromErrno("socket"));
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small requests and frames go out at once
  const int rcvbuf = s->rcvbuf_bytes_ > 0 ? s->rcvbuf_bytes_ : options_.rcvbuf_bytes;
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->fd_ = fd;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    connect_failures_++;
    Fail(s, Status::FromErrno("connect"));
    return;
  }
  s->phase_ = ClientSocket::Phase::kConnecting;
  s->admitting_ = true;
  connecting_++;
  epoll_event ev{};
  ev.events = EPOLLOUT;  // writable = connected (or failed: SO_ERROR says)
  ev.data.ptr = s;
  s->interest_ = ev.events;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) Fail(s, Status::FromErrno("epoll_ctl(ADD)"));
}

void ClientLoop::UpdateInterest(ClientSocket* s) {
  if (s->fd_ < 0) return;
  uint32_t events = 0;
  if (s->phase_ == ClientSocket::Phase::kConnecting) {
    events = EPOLLOUT;
  } else {
    // EPOLLRDHUP is not asked for: a peer's FIN is seen as a read of 0 bytes.
    if (s->reading_ && s->want_read_) events |= EPOLLIN;
    if (s->out_off_ < s->out_.size()) events |= EPOLLOUT;
  }
  if (events == s->interest_) return;
  s->interest_ = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = s;
  ::epoll_ctl(epfd_, EPOLL_CTL_MOD, s->fd_, &ev);
}

void ClientLoop::Send(ClientSocket* s, std::string_view bytes) {
  if (s->fd_ < 0) return;
  s->out_.append(bytes);
  if (s->phase_ == ClientSocket::Phase::kConnected) Flush(s);
}

void ClientLoop::Admitted(ClientSocket* s) {
  if (!s->admitting_) return;
  s->admitting_ = false;
  connecting_--;
  StartQueued();
}

void ClientLoop::SetWantRead(ClientSocket* s, bool want) {
  s->want_read_ = want;
  UpdateInterest(s);
}

void ClientLoop::Close(ClientSocket* s, bool reset) {
  if (s->phase_ == ClientSocket::Phase::kClosed) return;
  if (s->admitting_) {
    s->admitting_ = false;
    connecting_--;
  }
  if (s->fd_ >= 0) {
    if (reset) {
      linger lg{1, 0};  // close() sends RST and discards unread data
      ::setsockopt(s->fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, s->fd_, nullptr);
    ::close(s->fd_);
    s->fd_ = -1;
  }
  s->phase_ = ClientSocket::Phase::kClosed;
  auto it = sockets_.find(s);
  if (it != sockets_.end()) {
    graveyard_.push_back(std::move(it->second));
    sockets_.erase(it);
  }
  StartQueued();
}

void ClientLoop::Fail(ClientSocket* s, const Status& why) {
  if (s->phase_ == ClientSocket::Phase::kClosed) return;
  transport_->OnFailed(s, why);
  Close(s, false);
}

void ClientLoop::Flush(ClientSocket* s) {
  const bool pending = s->out_off_ < s->out_.size();
  while (s->out_off_ < s->out_.size()) {
    ssize_t n = ::send(s->fd_, s->out_.data() + s->out_off_, s->out_.size() - s->out_off_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      Fail(s, Status::FromErrno("send"));
      return;
    }
    s->out_off_ += static_cast<size_t>(n);
  }
  if (pending && s->out_off_ == s->out_.size()) {
    std::string().swap(s->out_);
    s->out_off_ = 0;
    s->reading_ = true;  // kAfterFirstWrite: the request is out
    transport_->OnWritten(s);
    if (s->phase_ == ClientSocket::Phase::kClosed) return;
  }
  UpdateInterest(s);
}

void ClientLoop::ReadSome(ClientSocket* s) {
  ssize_t n = ::recv(s->fd_, buf_.data(), buf_.size(), 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    Fail(s, Status::FromErrno("recv"));
    return;
  }
  if (n == 0) {
    transport_->OnEof(s);
    return;
  }
  s->wire_bytes_ += static_cast<uint64_t>(n);
  transport_->OnBytes(s, std::string_view(buf_.data(), static_cast<size_t>(n)));
}

void ClientLoop::OnEvents(ClientSocket* s, uint32_t events) {
  if (s->phase_ == ClientSocket::Phase::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s->fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      connect_failures_++;
      Fail(s, Status::Error(std::string("connect: ") + std::strerror(err)));
      return;
    }
    s->phase_ = ClientSocket::Phase::kConnected;
    if (s->read_start_ == ReadStart::kOnConnect) s->reading_ = true;
    transport_->OnConnected(s);
    if (s->phase_ == ClientSocket::Phase::kClosed) return;
    Flush(s);
    return;
  }
  if (!s->reading_) {  // kAfterFirstWrite: the first bytes are still going out
    Flush(s);
    return;
  }
  if (events & EPOLLOUT) {
    Flush(s);
    if (s->phase_ == ClientSocket::Phase::kClosed) return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ReadSome(s);
}

bool ClientLoop::Run(const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick,
                     int tick_ms) {
  return loop_.Run(
      epfd_, done, deadline_us, tick, tick_ms,
      [this](void* ptr, uint32_t events) {
        ClientSocket* s = static_cast<ClientSocket*>(ptr);
        // A socket closed earlier in this batch is in the graveyard, still valid.
        if (s->phase_ != ClientSocket::Phase::kClosed) OnEvents(s, events);
      },
      [this] { graveyard_.clear(); });
}

}  // namespace tw::bench
