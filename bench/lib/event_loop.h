// The timer queue and epoll wait loop under the load generators' client
// loop (client_loop.h, shared by bench/loadgen for HTTP/SSE and
// bench/ws_loadgen for WebSocket). The client loop owns the sockets and
// registers them with its epoll instance, carrying a pointer to each
// connection; this loop runs what is due (timers, the progress tick) and
// hands each ready event back.
// Threading: one thread, the generator's.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace tw::bench {

// Microseconds since the first call (steady clock).
double NowUs();

class EventLoop {
 public:
  // Runs `fn` at NowUs() >= at_us, from inside Run; equal times run in the
  // order they were queued.
  void At(double at_us, std::function<void()> fn);

  // Until `done()` is true or `deadline_us` passes (then returns false):
  // runs the due timers, then `after_callbacks`, `tick` about every
  // `tick_ms`, waits on `epfd` (at most 100 ms, less if a timer, the tick or
  // the deadline is nearer), calls `on_event(ptr, events)` for each ready
  // registration, then `after_callbacks` again. (The generators free the
  // connections closed during callbacks there, never inside one.)
  bool Run(int epfd, const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick,
           int tick_ms, const std::function<void(void* ptr, uint32_t events)>& on_event,
           const std::function<void()>& after_callbacks);

 private:
  struct Timer {
    double at_us;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Timer& o) const { return at_us != o.at_us ? at_us > o.at_us : seq > o.seq; }
  };
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t seq_ = 0;
};

}  // namespace tw::bench
