#include "net/worker_pool.h"

#include <utility>

namespace tw::net {

WorkerPool::WorkerPool(EventLoop* loop, int threads, size_t max_queued, size_t large_cost)
    : loop_(loop), max_queued_(max_queued), large_cost_(large_cost) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; i++) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::Submit(std::function<void()> work, std::function<void()> done, size_t cost) {
  {
    MutexLock lock(mu_);
    if (stopping_ || small_.size() + large_.size() >= max_queued_) return false;
    (cost >= large_cost_ ? large_ : small_).push_back(Job{std::move(work), std::move(done)});
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  std::deque<Job> dropped, dropped_large;
  {
    MutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(small_);
    dropped_large.swap(large_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  // `dropped` (their done callbacks) is destroyed here, on the caller's thread.
}

size_t WorkerPool::queued() const {
  MutexLock lock(mu_);
  return small_.size() + large_.size();
}

size_t WorkerPool::running() const {
  MutexLock lock(mu_);
  return running_;
}

void WorkerPool::Run() {
  for (;;) {
    Job job;
    {
      MutexLock lock(mu_);
      while (!stopping_ && small_.empty() && large_.empty()) lock.Wait(cv_);
      if (stopping_) return;
      const bool take_large = !large_.empty() && (small_.empty() || large_skips_ >= kMaxLargeSkips);
      std::deque<Job>& from = take_large ? large_ : small_;
      job = std::move(from.front());
      from.pop_front();
      large_skips_ = take_large || large_.empty() ? 0 : large_skips_ + 1;
      running_++;
    }
    job.work();
    job.work = nullptr;
    loop_->Post(std::move(job.done));
    MutexLock lock(mu_);
    running_--;
  }
}

}  // namespace tw::net
