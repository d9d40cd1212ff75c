#include "event_loop.h"

#include <sys/epoll.h>

#include <algorithm>
#include <chrono>

namespace tw::bench {

double NowUs() {
  static const auto start = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

void EventLoop::At(double at_us, std::function<void()> fn) { timers_.push(Timer{at_us, seq_++, std::move(fn)}); }

bool EventLoop::Run(int epfd, const std::function<bool()>& done, double deadline_us,
                    const std::function<void()>& tick, int tick_ms,
                    const std::function<void(void* ptr, uint32_t events)>& on_event,
                    const std::function<void()>& after_callbacks) {
  std::vector<epoll_event> events(1024);
  double next_tick = NowUs() + tick_ms * 1000.0;
  while (!done()) {
    const double now = NowUs();
    if (now >= deadline_us) return false;
    while (!timers_.empty() && timers_.top().at_us <= now) {
      auto fn = timers_.top().fn;
      timers_.pop();
      fn();
    }
    after_callbacks();
    if (done()) break;
    if (tick && now >= next_tick) {
      tick();
      next_tick = now + tick_ms * 1000.0;
    }
    double wait_us = std::min(deadline_us, next_tick) - now;
    if (!timers_.empty()) wait_us = std::min(wait_us, timers_.top().at_us - now);
    int timeout_ms = wait_us <= 0 ? 0 : static_cast<int>(wait_us / 1000.0) + 1;
    if (timeout_ms > 100) timeout_ms = 100;
    const int n = ::epoll_wait(epfd, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int i = 0; i < n; ++i) on_event(events[i].data.ptr, events[i].events);
    after_callbacks();
  }
  after_callbacks();
  return true;
}

}  // namespace tw::bench
