// WorkerPool: work whose cost grows with the input (tokenizing a prompt,
// parsing a large body) run off the event loop, so one big request cannot
// stall every other connection; the result comes back to the loop.
//
// Submit(work, done): `work` runs on one of the pool's threads; `done` then
// runs on the loop thread (EventLoop::Post), where it may touch loop-owned
// state (answer a request, create a stream). Each job has a cost (the bytes
// it works through); a job of at least `large_cost` is large. Small jobs
// start in submission order before any large one, so a request of a few
// bytes never waits behind megabytes of others' bodies (only behind jobs
// already running); large jobs start in their order, and one that has been
// passed over kMaxLargeSkips times goes next, so a steady stream of small
// jobs cannot starve them either. The queue is bounded: Submit
// refuses (returns false, nothing runs) while `max_queued` jobs wait, and
// the caller answers 503 overloaded.
//
// Threads: Submit and Stop on the loop thread; the workers run `work` only.
// `work` must not touch loop-owned state; it hands its result to `done`
// through what both capture (e.g. a shared_ptr). Memory: at most max_queued
// waiting jobs plus one running per thread. Stop() (and the destructor)
// waits for running jobs and drops the waiting ones: their `done` never runs
// (it is destroyed on the caller's thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "net/event_loop.h"

namespace tw::net {

class WorkerPool {
 public:
  static constexpr int kMaxLargeSkips = 8;

  WorkerPool(EventLoop* loop, int threads, size_t max_queued, size_t large_cost = SIZE_MAX);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  bool Submit(std::function<void()> work, std::function<void()> done, size_t cost = 0);
  void Stop();
  size_t queued() const;  // waiting, not yet started (THREAD-SAFE)
  size_t running() const;  // being worked on now (THREAD-SAFE)

 private:
  struct Job {
    std::function<void()> work;
    std::function<void()> done;
  };
  void Run();

  EventLoop* loop_;
  const size_t max_queued_;
  const size_t large_cost_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> small_ TW_GUARDED_BY(mu_);
  std::deque<Job> large_ TW_GUARDED_BY(mu_);
  int large_skips_ TW_GUARDED_BY(mu_) = 0;  // small jobs started while large_ waited
  bool stopping_ TW_GUARDED_BY(mu_) = false;
  size_t running_ TW_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace tw::net
