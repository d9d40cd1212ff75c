// EpollBackend: the Linux epoll(7) half of the event loop (redis ae_epoll.c
// style), kept apart so that EventLoop reads as the portable policy.
//
// Threads: the loop thread only. Allocates one epoll fd and a fired-event array
// of `kMaxEventsPerWait` entries at Init(); nothing afterwards. Never blocks
// except inside Wait().
#pragma once

#include <sys/epoll.h>

#include <vector>

#include "common/status.h"

namespace tw::net {

// Interest and readiness bits shared with EventLoop.
constexpr int kReadable = 1;
constexpr int kWritable = 2;
constexpr int kHangup = 4;  // reported only: peer closed (RDHUP), hung up or socket error

class EpollBackend {
 public:
  static constexpr int kMaxEventsPerWait = 256;  // fired events fetched per epoll_wait

  struct Fired {
    int fd;
    int events;  // kReadable | kWritable | kHangup
  };

  EpollBackend() = default;
  ~EpollBackend();
  EpollBackend(const EpollBackend&) = delete;
  EpollBackend& operator=(const EpollBackend&) = delete;

  Status Init();
  Status Add(int fd, int mask);
  Status Modify(int fd, int mask);
  Status Remove(int fd);
  // Waits up to timeout_ms (-1: forever) and fills *fired. EINTR is not an
  // error: it returns OK with no events so the caller re-checks its timers.
  Status Wait(int timeout_ms, std::vector<Fired>* fired);

 private:
  int epfd_ = -1;
  std::vector<epoll_event> events_;
};

}  // namespace tw::net
