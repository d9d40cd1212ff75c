#include "net/worker_pool.h"

#include <utility>

namespace tw::net {

WorkerPool::WorkerPool(EventLoop* loop, int threads, size_t max_queued)
    : loop_(loop), max_queued_(max_queued) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < threads; i++) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::Submit(std::function<void()> work, std::function<void()> done) {
  {
    MutexLock lock(mu_);
    if (stopping_ || jobs_.size() >= max_queued_) return false;
    jobs_.push_back(Job{std::move(work), std::move(done)});
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  std::deque<Job> dropped;
  {
    MutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(jobs_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  // `dropped` (their done callbacks) is destroyed here, on the caller's thread.
}

size_t WorkerPool::queued() const {
  MutexLock lock(mu_);
  return jobs_.size();
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
      while (!stopping_ && jobs_.empty()) lock.Wait(cv_);
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
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
