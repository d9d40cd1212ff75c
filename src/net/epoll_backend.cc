#include "net/epoll_backend.h"

#include <unistd.h>

#include <cerrno>

namespace tw::net {
namespace {

uint32_t ToEpoll(int mask) {
  // Level-triggered (no EPOLLET): a callback may read or write only part of
  // what is ready (per-event caps keep one client from starving the others) and
  // epoll reports the rest on the next wait, so nothing is ever lost.
  // EPOLLRDHUP is always asked for: it reports a peer's FIN even while we are
  // not reading (a paused connection still notices that its client left).
  // EPOLLERR and EPOLLHUP are always reported by the kernel, whatever we ask.
  uint32_t ev = EPOLLRDHUP;
  if (mask & kReadable) ev |= EPOLLIN;
  if (mask & kWritable) ev |= EPOLLOUT;
  return ev;
}

}  // namespace

EpollBackend::~EpollBackend() {
  if (epfd_ >= 0) ::close(epfd_);
}

Status EpollBackend::Init() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return Status::FromErrno("epoll_create1");
  events_.resize(kMaxEventsPerWait);
  return Status::Ok();
}

Status EpollBackend::Add(int fd, int mask) {
  epoll_event ev{};
  ev.events = ToEpoll(mask);
  ev.data.fd = fd;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    return Status::FromErrno("epoll_ctl(ADD, fd " + std::to_string(fd) + ")");
  }
  return Status::Ok();
}

Status EpollBackend::Modify(int fd, int mask) {
  epoll_event ev{};
  ev.events = ToEpoll(mask);
  ev.data.fd = fd;
  if (::epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) != 0) {
    return Status::FromErrno("epoll_ctl(MOD, fd " + std::to_string(fd) + ")");
  }
  return Status::Ok();
}

Status EpollBackend::Remove(int fd) {
  // A non-null event pointer keeps pre-2.6.9 kernels happy; closing an fd also
  // removes it, but only once every duplicate of it is closed, so be explicit.
  epoll_event ev{};
  if (::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, &ev) != 0) {
    return Status::FromErrno("epoll_ctl(DEL, fd " + std::to_string(fd) + ")");
  }
  return Status::Ok();
}

Status EpollBackend::Wait(int timeout_ms, std::vector<Fired>* fired) {
  fired->clear();
  int n = ::epoll_wait(epfd_, events_.data(), static_cast<int>(events_.size()), timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return Status::Ok();  // a signal interrupted the wait: not an error
    return Status::FromErrno("epoll_wait");
  }
  for (int i = 0; i < n; ++i) {
    uint32_t e = events_[i].events;
    int out = 0;
    if (e & EPOLLIN) out |= kReadable;
    if (e & EPOLLOUT) out |= kWritable;
    // RDHUP: peer sent FIN (data may still be readable before it);
    // HUP: both directions are down; ERR: pending socket error (e.g. RST).
    if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) out |= kHangup;
    fired->push_back({events_[i].data.fd, out});
  }
  return Status::Ok();
}

}  // namespace tw::net
