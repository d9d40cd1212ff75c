// A running EventLoop on a background thread, for tests of I/O-thread code.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include "net/event_loop.h"

namespace tw::testing {

class LoopThread {
 public:
  LoopThread() {
    EXPECT_TRUE(loop_.Init().ok());
    thread_ = std::thread([this] { (void)loop_.Run(); });
  }
  ~LoopThread() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    loop_.Post([this] { loop_.Stop(); });
    thread_.join();
  }
  net::EventLoop* loop() { return &loop_; }

  // Runs fn on the loop thread and waits for it.
  template <class F>
  auto Call(F fn) -> decltype(fn()) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto fut = task.get_future();
    loop_.Post([&task] { task(); });
    return fut.get();
  }

 private:
  net::EventLoop loop_;
  std::thread thread_;
};

// Polls `pred` (on the calling thread) until true or the deadline passes.
inline bool WaitFor(const std::function<bool()>& pred, int timeout_ms = 5000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

}  // namespace tw::testing
