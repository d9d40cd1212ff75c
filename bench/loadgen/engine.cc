#include "loadgen/engine.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "client/http_client.h"

namespace tw::loadgen {

Engine::Engine(uint16_t port, EngineOptions options)
    : port_(port), options_(options), buf_(options.read_buffer_bytes) {}

Engine::~Engine() {
  for (auto& [c, owned] : conns_) {
    if (c->fd_ >= 0) ::close(c->fd_);
  }
  if (epfd_ >= 0) ::close(epfd_);
}

Status Engine::Init() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return Status::FromErrno("epoll_create1");
  return Status::Ok();
}

Conn* Engine::Open(std::string request, Handler* handler, uint64_t tag, ConnOptions options) {
  auto owned = std::make_unique<Conn>();
  Conn* c = owned.get();
  c->handler_ = handler;
  c->tag_ = tag;
  c->out_ = std::move(request);
  c->rcvbuf_bytes_ = options.rcvbuf_bytes;
  c->responses_ = options.responses < 1 ? 1 : options.responses;
  c->reading_ = options.reading;
  conns_.emplace(c, std::move(owned));
  queued_.push(c);
  StartQueued();
  return c;
}

void Engine::StartQueued() {
  while (connecting_ < options_.max_connecting && !queued_.empty()) {
    Conn* c = queued_.front();
    queued_.pop();
    if (c->phase_ != Conn::Phase::kQueued) continue;  // closed while queued
    StartConnect(c);
  }
}

void Engine::StartConnect(Conn* c) {
  c->opened_us_ = NowUs();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    connect_failures_++;
    Finish(c, false, Status::FromErrno("socket"));
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int rcvbuf = c->rcvbuf_bytes_ > 0 ? c->rcvbuf_bytes_ : options_.rcvbuf_bytes;
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->fd_ = fd;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    connect_failures_++;
    Finish(c, false, Status::FromErrno("connect"));
    return;
  }
  c->phase_ = Conn::Phase::kConnecting;
  connecting_++;
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.ptr = c;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    Finish(c, false, Status::FromErrno("epoll_ctl(ADD)"));
  }
}

void Engine::UpdateInterest(Conn* c) {
  if (c->fd_ < 0) return;
  epoll_event ev{};
  ev.data.ptr = c;
  if (c->phase_ == Conn::Phase::kConnecting || c->phase_ == Conn::Phase::kWriting) ev.events = EPOLLOUT;
  // EPOLLRDHUP is not asked for: a peer's FIN is seen as a read of 0 bytes.
  if (c->phase_ == Conn::Phase::kReading && c->reading_) ev.events = EPOLLIN;
  ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd_, &ev);
}

void Engine::StopReading(Conn* c) {
  c->reading_ = false;
  UpdateInterest(c);
}

void Engine::ResumeReading(Conn* c, bool widen) {
  if (widen && c->fd_ >= 0) client::WidenReceiveWindow(c->fd_);
  c->reading_ = true;
  UpdateInterest(c);
}

void Engine::Close(Conn* c, bool reset) { Release(c, reset); }

void Engine::Release(Conn* c, bool reset) {
  if (c->phase_ == Conn::Phase::kClosed) return;
  if (c->phase_ == Conn::Phase::kConnecting) connecting_--;
  if (c->fd_ >= 0) {
    if (reset) {
      linger lg{1, 0};  // close() sends RST and discards unread data
      ::setsockopt(c->fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd_, nullptr);
    ::close(c->fd_);
    c->fd_ = -1;
  }
  c->phase_ = Conn::Phase::kClosed;
  auto it = conns_.find(c);
  if (it != conns_.end()) {
    graveyard_.push_back(std::move(it->second));
    conns_.erase(it);
  }
  StartQueued();
}

void Engine::Finish(Conn* c, bool complete, const Status& why) {
  if (c->phase_ == Conn::Phase::kClosed) return;
  c->handler_->OnEnd(c, complete, why);
  Release(c, false);
}

void Engine::Flush(Conn* c) {
  while (c->out_off_ < c->out_.size()) {
    ssize_t n = ::send(c->fd_, c->out_.data() + c->out_off_, c->out_.size() - c->out_off_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      Finish(c, false, Status::FromErrno("send"));
      return;
    }
    c->out_off_ += static_cast<size_t>(n);
  }
  c->sent_us_ = NowUs();
  c->phase_ = Conn::Phase::kReading;
  std::string().swap(c->out_);
  UpdateInterest(c);
}

void Engine::ReadSome(Conn* c) {
  ssize_t n = ::recv(c->fd_, buf_.data(), buf_.size(), 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    Finish(c, false, Status::FromErrno("recv"));
    return;
  }
  if (n == 0) {
    Status st = c->parser_.FeedEof();
    Finish(c, st.ok() && c->parser_.done(), st.ok() ? Status::Error("EOF before the response ended") : st);
    return;
  }
  c->wire_bytes_ += static_cast<uint64_t>(n);
  std::string_view in(buf_.data(), static_cast<size_t>(n));
  while (!in.empty() && c->phase_ == Conn::Phase::kReading) {
    bool had_head = c->parser_.head_done();
    size_t used = 0;
    Status st = c->parser_.Feed(in, &used);
    if (!st.ok()) {
      Finish(c, false, st);
      return;
    }
    in.remove_prefix(used);
    if (!had_head && c->parser_.head_done()) c->handler_->OnHead(c, c->parser_.head());
    if (c->phase_ != Conn::Phase::kReading) return;  // the handler closed it
    if (c->parser_.done()) {
      c->responses_done_++;
      c->handler_->OnResponseDone(c);
      if (c->phase_ != Conn::Phase::kReading) return;
      if (c->responses_done_ < c->responses_) {
        c->parser_.Reset();  // a pipelined response follows
        continue;
      }
      Finish(c, true, Status::Ok());
      return;
    }
    if (used == 0 && !in.empty()) {
      Finish(c, false, Status::Error("response parser made no progress"));
      return;
    }
  }
}

void Engine::OnEvents(Conn* c, uint32_t events) {
  if (c->phase_ == Conn::Phase::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c->fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    connecting_--;
    if (err != 0) {
      connect_failures_++;
      c->phase_ = Conn::Phase::kWriting;  // so Release does not count it twice
      Finish(c, false, Status::Error(std::string("connect: ") + std::strerror(err)));
      return;
    }
    c->phase_ = Conn::Phase::kWriting;
    c->parser_.set_body_sink([c](std::string_view b) {
      c->handler_->OnBody(c, b);
      return c->phase_ == Conn::Phase::kReading;  // stop feeding once closed
    });
    Flush(c);
    StartQueued();
    return;
  }
  if (c->phase_ == Conn::Phase::kWriting) {
    Flush(c);
    return;
  }
  if (c->phase_ == Conn::Phase::kReading && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) ReadSome(c);
}

void Engine::At(double at_us, std::function<void()> fn) { loop_.At(at_us, std::move(fn)); }

bool Engine::Run(const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick,
                 int tick_ms) {
  return loop_.Run(
      epfd_, done, deadline_us, tick, tick_ms,
      [this](void* ptr, uint32_t events) {
        Conn* c = static_cast<Conn*>(ptr);
        // A Conn closed earlier in this batch is in the graveyard, still valid.
        if (c->phase_ != Conn::Phase::kClosed) OnEvents(c, events);
      },
      [this] { graveyard_.clear(); });
}

}  // namespace tw::loadgen
