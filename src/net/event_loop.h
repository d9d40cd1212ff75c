// EventLoop: one thread's reactor (redis ae style): file events with a
// READ/WRITE interest mask, one-shot and repeating timers on the monotonic
// clock, a thread-safe Post() inbox woken by an eventfd, a before-sleep
// hook, and deferred flushes: a Flushable queued during an iteration is
// flushed once at its end (after the file events, timers and posted
// functions), which is how a connection corks everything written to it in
// one iteration into one send. The epoll details live in epoll_backend.h.
//
// Threads: every method runs on the loop thread (the one inside Run()), or
// before Run() starts, EXCEPT Post(), which any thread may call at any time.
// Allocation: one heap callback per file event, timer and posted function;
// the fired-event array is fixed (EpollBackend::kMaxEventsPerWait).
// Never: blocks anywhere but epoll_wait, frees a callback while it runs
// (removed callbacks and ReleaseLater() objects are destroyed at the end of
// the loop iteration), or lets SIGPIPE kill the process (Init() ignores it
// process-wide; sends also use MSG_NOSIGNAL).
//
// Callbacks must tolerate spurious readiness (read/write answering EAGAIN):
// an fd closed and reused by accept() within one batch of events can receive
// a readiness bit meant for its previous owner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "net/epoll_backend.h"

namespace tw::net {

// Something with output to flush at the end of a loop iteration (a corked
// connection). Queued at most once (EventLoop::DeferFlush); it must call
// EventLoop::CancelFlush before it is destroyed while queued.
class Flushable {
 public:
  virtual ~Flushable() = default;
  virtual void FlushDeferred() = 0;

 private:
  friend class EventLoop;
  bool flush_queued_ = false;
};

// Ignores SIGPIPE for the whole process (a write to a reset socket must be an
// EPIPE return value, never a signal). Idempotent; EventLoop::Init calls it.
void IgnoreSigpipe();

class EventLoop {
 public:
  // `events` is kReadable / kWritable / kHangup as reported by the backend.
  using FileCallback = std::function<void(int fd, int events)>;
  using TimerId = uint64_t;  // never 0

  EventLoop() = default;
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Creates the epoll instance and the wake-up eventfd. Call once, first.
  Status Init();

  // Registers fd with interest `mask` (kReadable | kWritable; peer hang-up is
  // always reported). Replaces an existing registration of the same fd.
  Status AddFileEvent(int fd, int mask, FileCallback cb);
  Status SetFileEventMask(int fd, int mask);
  // Unregisters fd (it must still be open). The callback is destroyed at the
  // end of this loop iteration, so a callback may remove itself.
  void RemoveFileEvent(int fd);

  // Runs fn once, `delay_ms` from now (0: in this or the next iteration).
  TimerId AddTimer(int64_t delay_ms, std::function<void()> fn);
  // Runs fn every `period_ms` (at least 1) until cancelled.
  TimerId AddRepeatingTimer(int64_t period_ms, std::function<void()> fn);
  // Returns false if the id is unknown (already fired or cancelled). A timer
  // may cancel itself from inside its callback.
  bool CancelTimer(TimerId id);
  size_t timer_count() const { return timers_.size(); }

  // THREAD-SAFE. Queues fn to run on the loop thread in a later iteration,
  // in posting order. Posting from the loop thread itself is fine.
  void Post(std::function<void()> fn);

  // Called at the start of every iteration, just before epoll_wait.
  void SetBeforeSleep(std::function<void()> fn) { before_sleep_ = std::move(fn); }

  // Queues f's FlushDeferred for the end of this iteration (once, however
  // often it is called); a flush queued by a flush runs in the next
  // iteration, which then does not wait in epoll.
  void DeferFlush(Flushable* f);
  // Takes f off the queue (before f is destroyed). Idempotent.
  void CancelFlush(Flushable* f);

  // Keeps obj alive until the end of the current iteration (close-later: an
  // object closed inside its own callback is freed only after it returns).
  void ReleaseLater(std::shared_ptr<void> obj) { release_later_.push_back(std::move(obj)); }

  // Runs until Stop(). Returns an error only if epoll_wait itself fails.
  Status Run();
  // Makes Run() return after the current iteration.
  void Stop() { stop_ = true; }

  bool InLoopThread() const { return std::this_thread::get_id() == loop_thread_; }
  // Iterations begun so far (a per-iteration budget resets when it moves).
  uint64_t iteration() const { return iteration_; }
  // Monotonic milliseconds (CLOCK_MONOTONIC via steady_clock).
  static int64_t NowMs();

 private:
  struct FileEvent {
    int mask = 0;
    FileCallback cb;
  };
  struct Timer {
    int64_t deadline_ns = 0;
    int64_t period_ns = 0;  // 0: one-shot
    std::function<void()> fn;
  };

  TimerId AddTimerNs(int64_t delay_ns, int64_t period_ns, std::function<void()> fn);
  int NextTimeoutMs() const;
  void RunDueTimers();
  void RunPosted();
  void RunFlushes();
  void OnWakeup();
  static int64_t NowNs();

  EpollBackend backend_;
  int wake_fd_ = -1;  // eventfd written by Post()
  std::vector<std::unique_ptr<FileEvent>> files_;  // indexed by fd
  std::vector<std::unique_ptr<FileEvent>> removed_;  // freed at iteration end
  std::vector<EpollBackend::Fired> fired_;

  // Timers ordered by (deadline, id); the map owns the callbacks.
  std::set<std::pair<int64_t, TimerId>> timer_order_;
  std::unordered_map<TimerId, Timer> timers_;
  TimerId next_timer_id_ = 1;

  Mutex post_mu_;
  std::vector<std::function<void()>> posted_ TW_GUARDED_BY(post_mu_);
  std::vector<std::function<void()>> running_posted_;  // loop thread only

  std::vector<Flushable*> flushes_;          // queued this iteration
  std::vector<Flushable*> running_flushes_;  // RunFlushes' batch
  std::function<void()> before_sleep_;
  std::vector<std::shared_ptr<void>> release_later_;
  bool stop_ = false;
  uint64_t iteration_ = 0;
  std::thread::id loop_thread_ = std::this_thread::get_id();
};

}  // namespace tw::net
