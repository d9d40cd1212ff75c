#include "net/event_loop.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

namespace tw::net {

void IgnoreSigpipe() {
  struct sigaction sa{};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGPIPE, &sa, nullptr);
}

EventLoop::~EventLoop() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

int64_t EventLoop::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t EventLoop::NowMs() { return NowNs() / 1000000; }

Status EventLoop::Init() {
  IgnoreSigpipe();
  Status s = backend_.Init();
  if (!s.ok()) return s;
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::FromErrno("eventfd");
  return AddFileEvent(wake_fd_, kReadable, [this](int, int) { OnWakeup(); });
}

Status EventLoop::AddFileEvent(int fd, int mask, FileCallback cb) {
  if (fd < 0) return Status::Error("AddFileEvent: invalid fd " + std::to_string(fd));
  if (static_cast<size_t>(fd) >= files_.size()) files_.resize(fd + 1);
  bool existed = files_[fd] != nullptr;
  Status s = existed ? backend_.Modify(fd, mask) : backend_.Add(fd, mask);
  if (!s.ok()) return s;
  if (existed) removed_.push_back(std::move(files_[fd]));  // may be running right now
  files_[fd] = std::make_unique<FileEvent>();
  files_[fd]->mask = mask;
  files_[fd]->cb = std::move(cb);
  return Status::Ok();
}

Status EventLoop::SetFileEventMask(int fd, int mask) {
  if (fd < 0 || static_cast<size_t>(fd) >= files_.size() || !files_[fd]) {
    return Status::Error("SetFileEventMask: fd " + std::to_string(fd) + " is not registered");
  }
  if (files_[fd]->mask == mask) return Status::Ok();
  Status s = backend_.Modify(fd, mask);
  if (s.ok()) files_[fd]->mask = mask;
  return s;
}

void EventLoop::RemoveFileEvent(int fd) {
  if (fd < 0 || static_cast<size_t>(fd) >= files_.size() || !files_[fd]) return;
  backend_.Remove(fd);  // fails only if fd was already closed, which removed it anyway
  removed_.push_back(std::move(files_[fd]));
}

EventLoop::TimerId EventLoop::AddTimerNs(int64_t delay_ns, int64_t period_ns,
                                         std::function<void()> fn) {
  TimerId id = next_timer_id_++;
  Timer t;
  t.deadline_ns = NowNs() + (delay_ns > 0 ? delay_ns : 0);
  t.period_ns = period_ns;
  t.fn = std::move(fn);
  timer_order_.emplace(t.deadline_ns, id);
  timers_.emplace(id, std::move(t));
  return id;
}

EventLoop::TimerId EventLoop::AddTimer(int64_t delay_ms, std::function<void()> fn) {
  return AddTimerNs(delay_ms * 1000000, 0, std::move(fn));
}

EventLoop::TimerId EventLoop::AddRepeatingTimer(int64_t period_ms, std::function<void()> fn) {
  if (period_ms < 1) period_ms = 1;  // a 0 period would never let the loop sleep
  return AddTimerNs(period_ms * 1000000, period_ms * 1000000, std::move(fn));
}

bool EventLoop::CancelTimer(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return false;
  timer_order_.erase({it->second.deadline_ns, id});
  timers_.erase(it);
  return true;
}

int EventLoop::NextTimeoutMs() const {
  if (!flushes_.empty()) return 0;  // output queued by the last flushes
  if (timer_order_.empty()) return -1;
  int64_t wait_ns = timer_order_.begin()->first - NowNs();
  if (wait_ns <= 0) return 0;
  int64_t ms = (wait_ns + 999999) / 1000000;  // round up: never wake before the deadline
  return ms > 1000000000 ? 1000000000 : static_cast<int>(ms);
}

void EventLoop::RunDueTimers() {
  const int64_t now = NowNs();
  // Timers added by callbacks get deadlines >= now, so a timer that re-adds
  // itself with delay 0 runs at most once per pass (>= now + 1 ns later).
  while (!timer_order_.empty() && timer_order_.begin()->first <= now) {
    TimerId id = timer_order_.begin()->second;
    timer_order_.erase(timer_order_.begin());
    auto it = timers_.find(id);
    std::function<void()> fn = std::move(it->second.fn);
    int64_t period = it->second.period_ns;
    if (period == 0) timers_.erase(it);  // one-shot: gone before it runs
    fn();
    if (period != 0) {
      auto again = timers_.find(id);  // absent if the callback cancelled it
      if (again != timers_.end()) {
        int64_t next = again->second.deadline_ns + period;
        int64_t t = NowNs();
        if (next <= t) next = t + period;  // fell behind: skip missed ticks
        again->second.deadline_ns = next;
        again->second.fn = std::move(fn);
        timer_order_.emplace(next, id);
      }
    }
  }
}

void EventLoop::Post(std::function<void()> fn) {
  {
    MutexLock lock(post_mu_);
    posted_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  // EAGAIN means the counter is saturated: a wake-up is pending anyway.
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;
}

void EventLoop::OnWakeup() {
  uint64_t count;
  // Reset the eventfd counter; the queue itself is drained by RunPosted().
  ssize_t n = ::read(wake_fd_, &count, sizeof count);
  (void)n;
}

void EventLoop::RunPosted() {
  {
    MutexLock lock(post_mu_);
    running_posted_.swap(posted_);
  }
  // Functions posted by these callbacks wait for the next iteration (the
  // eventfd is written again, so the loop will not sleep on them).
  for (auto& fn : running_posted_) fn();
  running_posted_.clear();
}

void EventLoop::DeferFlush(Flushable* f) {
  if (f->flush_queued_) return;
  f->flush_queued_ = true;
  flushes_.push_back(f);
}

void EventLoop::CancelFlush(Flushable* f) {
  if (!f->flush_queued_) return;
  f->flush_queued_ = false;
  for (auto* v : {&flushes_, &running_flushes_}) {
    auto it = std::find(v->begin(), v->end(), f);
    if (it != v->end()) *it = nullptr;  // RunFlushes skips it
  }
}

void EventLoop::RunFlushes() {
  running_flushes_.clear();
  running_flushes_.swap(flushes_);
  for (size_t i = 0; i < running_flushes_.size(); i++) {
    Flushable* f = running_flushes_[i];
    if (f == nullptr) continue;
    f->flush_queued_ = false;
    running_flushes_[i] = nullptr;
    f->FlushDeferred();  // may queue itself again (for the next iteration)
  }
  running_flushes_.clear();
}

Status EventLoop::Run() {
  loop_thread_ = std::this_thread::get_id();
  stop_ = false;
  while (!stop_) {
    iteration_++;
    if (before_sleep_) before_sleep_();
    Status s = backend_.Wait(NextTimeoutMs(), &fired_);
    if (!s.ok()) return s;
    for (const auto& f : fired_) {
      if (static_cast<size_t>(f.fd) >= files_.size()) continue;
      FileEvent* fe = files_[f.fd].get();
      if (fe == nullptr) continue;  // removed by an earlier callback in this batch
      fe->cb(f.fd, f.events);
    }
    RunDueTimers();
    RunPosted();
    RunFlushes();
    removed_.clear();
    release_later_.clear();
  }
  return Status::Ok();
}

}  // namespace tw::net
